import type { UserRecord } from '../store/records.js';
import { isTrialUser, liveCodes } from './entitlements.js';
import { viewMembership, type MembershipView } from './membership.js';

/** The membership of a User object: the seed's three fields, then `is_trial` (trial users only) and `entitlements`, last (contract, issue 24). */
export interface UserMembershipView extends MembershipView {
  is_trial?: true;
  entitlements: string[];
}

/** The User object of SPEC 2.1. */
export interface UserView {
  id: string;
  username: string;
  membership: UserMembershipView;
}

export function viewUserMembership(user: UserRecord, now: number): UserMembershipView {
  return {
    ...viewMembership(user, now),
    ...(isTrialUser(user, now) && { is_trial: true as const }),
    entitlements: liveCodes(user.grants, now),
  };
}

export function viewUser(user: UserRecord, now: number): UserView {
  return { id: user.id, username: user.username, membership: viewUserMembership(user, now) };
}
