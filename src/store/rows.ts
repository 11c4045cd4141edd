/** Column readers shared by the repositories: both drivers return NULL as null and numbers as numbers or numeric strings. */
export const nullableNumber = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
