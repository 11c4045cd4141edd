#!/usr/bin/env node
/**
 * Writes the shared test vectors of docs/signing.md: keys.json,
 * certificates.json, responses.json, leases.json (see README.md).
 * Deterministic: fixed seeds, fixed times, and Ed25519 signatures are
 * deterministic, so running it again changes no byte.
 *
 *   node sdk/test-vectors/generate.mjs           # write the files
 *   node sdk/test-vectors/generate.mjs --check    # exit 1 if a file differs
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { certificateCases } from './certificates.mjs';
import { APP_ID, keysFile, root } from './fixtures.mjs';
import { leasesFile } from './leases.mjs';
import { responsesFile } from './responses.mjs';

const here = dirname(fileURLToPath(import.meta.url));

function vectors() {
  return {
    'keys.json': keysFile(),
    'certificates.json': { app_id: APP_ID, root_public_key: root.publicKey, cases: certificateCases() },
    'responses.json': responsesFile(),
    'leases.json': leasesFile(),
  };
}

const check = process.argv.includes('--check');
let differs = 0;
for (const [name, content] of Object.entries(vectors())) {
  const text = `${JSON.stringify(content, null, 2)}\n`;
  const path = join(here, name);
  if (check) {
    let current = '';
    try {
      current = readFileSync(path, 'utf8');
    } catch {}
    if (current !== text) {
      differs++;
      console.error(`${name} differs from what generate.mjs writes`);
    }
  } else {
    writeFileSync(path, text);
    console.log(`wrote ${name}`);
  }
}
process.exitCode = differs ? 1 : 0;
