import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './cli-process.js';

/**
 * Outside a checkout, `npx tollgate` asks the npm registry for a package of
 * that name, which is someone else's (issue 15). The operator docs name the
 * installed `tollgate`; `npx tollgate` appears only on a line that says it is
 * for a checkout.
 */
const DOCS = ['README.md', 'docs/deploy.md'];

describe('operator docs suggest npx tollgate only for a checkout', () => {
  for (const doc of DOCS) {
    it(doc, () => {
      const lines = readFileSync(join(ROOT, doc), 'utf8').split('\n');
      const bare = lines
        .map((line, i) => ({ line, n: i + 1 }))
        .filter(({ line }) => /\bnpx tollgate\b/.test(line) && !/checkout/i.test(line) && !/not `npx tollgate`/.test(line));
      expect(bare.map(({ n, line }) => `${doc}:${n}: ${line}`)).toEqual([]);
    });
  }
});
