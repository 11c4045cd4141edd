import { readFileSync } from 'node:fs';

/**
 * The package's own package.json, found from this module's place (dist/cli/ in
 * a checkout and in an installed package alike), never from the current
 * directory: an installed `tollgate` runs from anywhere.
 */
const PACKAGE_JSON = new URL('../../package.json', import.meta.url);

export const VERSION: string = (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;

/**
 * How the operator runs this command again: `npx tollgate` under `npm start`
 * in a checkout (the bin is not on PATH there), `tollgate` when installed.
 */
export function commandName(env: NodeJS.ProcessEnv = process.env): string {
  return env.npm_lifecycle_event ? 'npx tollgate' : 'tollgate';
}
