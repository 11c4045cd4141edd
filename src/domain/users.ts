import type { UserRecord } from '../store/records.js';
import { viewMembership, type MembershipView } from './membership.js';

/** The User object of SPEC 2.1. */
export interface UserView {
  id: string;
  username: string;
  membership: MembershipView;
}

export function viewUser(user: UserRecord, now: number): UserView {
  return { id: user.id, username: user.username, membership: viewMembership(user, now) };
}
