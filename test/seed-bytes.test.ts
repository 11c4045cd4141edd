import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './helpers.js';
import { seedAnswers, type Recorded } from './seed-scenario.js';

/**
 * Issue 24's promise to the seed's clients: apart from the added `entitlements` field, every answer
 * is byte for byte what the seed answered. test/fixtures/seed-answers.json holds the seed's answers
 * to test/seed-scenario.ts (captured by running that file on the seed's code, commit 885b55a); this
 * replays it on today's code, unsigned and signed, and removes exactly the added field.
 */
const SEED = JSON.parse(readFileSync(new URL('./fixtures/seed-answers.json', import.meta.url), 'utf8')) as Record<'signed' | 'unsigned', Recorded[]>;
const ADDED = ',"entitlements":[]}';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => h.close());

describe('the seed’s answers, byte for byte, but for membership.entitlements', () => {
  for (const mode of ['unsigned', 'signed'] as const) {
    it(`${mode}: sign-ups, activation, login and app context`, async () => {
      const now = await seedAnswers(h, mode === 'signed');
      expect(now.map((r) => r.name)).toEqual(SEED[mode].map((r) => r.name));
      for (const [i, answer] of now.entries()) {
        const seed = SEED[mode][i]!;
        const users = (seed.body.match(/"membership":\{/g) ?? []).length;
        // Each membership gains the field once, as its last key; nothing else differs.
        expect(answer.body.split(ADDED).length - 1, answer.name).toBe(users);
        expect({ ...answer, body: answer.body.split(ADDED).join('}') }, answer.name).toEqual(seed);
      }
    });
  }
});
