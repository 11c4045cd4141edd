/** Why a private primary/replica pair cannot run here, or null when it can. */
export function pairUnavailable(): string | null;
export function postgresBin(): string | null;
