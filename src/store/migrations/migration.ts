/**
 * What a migration is. Apart from the list in index.ts so that a migration's import of this type
 * and index.ts's import of the migration make no file cycle (docs/layers.md): each migration imports
 * this file, never index.ts.
 */

/** Column types that differ by dialect; everything else in a migration is shared SQL. */
export interface DialectTypes {
  ts: string; // integer milliseconds since the epoch
  blob: string;
}

export interface Migration {
  version: number;
  name: string;
  up(types: DialectTypes): string;
}
