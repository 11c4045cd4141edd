import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Operator, SessionAnswer } from './api';
import { canWrite, type Area } from './roles';

export interface SessionState {
  operator: Operator;
  idleTimeoutSeconds: number;
  /** Replaces the operator (after TOTP set-up) without a new sign-in. */
  update(answer: Partial<Operator>): void;
  signOut(): Promise<void>;
}

export const SessionContext = createContext<SessionState | null>(null);

export function useSession(): SessionState {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}

export function useCan(area: Area): boolean {
  return canWrite(useSession().operator.role, area);
}

export type { SessionAnswer };
