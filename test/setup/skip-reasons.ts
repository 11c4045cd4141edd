import type { Reporter, TestCase, TestModule, TestSuite } from 'vitest/node';

/**
 * Lists every skipped test at the end of a run, with why: the note given to
 * `ctx.skip(note)`, or else the name of the skipped describe or test, which
 * then says why itself ("… (PostgreSQL only)", "… (redis-server is not
 * installed)"). The default reporter counts skipped tests but names none, so
 * a skip nobody explains would otherwise go unseen. A describe skipped as a
 * whole prints once, with how many tests it holds.
 */
export default class SkipReasons implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const lines: string[] = [];
    let count = 0;
    for (const module of modules) {
      const skipped = [...module.children.allTests('skipped')];
      if (skipped.length === 0) continue;
      count += skipped.length;
      // The outermost suite whose every test is skipped stands for its tests.
      const wholly = (suite: TestSuite | TestModule): boolean => {
        const all = [...suite.children.allTests()];
        return all.length > 0 && all.every((t) => t.result().state === 'skipped');
      };
      const shown = new Map<string, { name: string; tests: number; note?: string }>();
      for (const test of skipped) {
        let top: TestCase | TestSuite = test;
        for (let p = test.parent; p.type === 'suite' && wholly(p); p = p.parent) top = p;
        const key = top.fullName;
        const entry = shown.get(key) ?? { name: key, tests: 0 };
        entry.tests += 1;
        const result = test.result();
        if (result.state === 'skipped') entry.note ??= result.note;
        shown.set(key, entry);
      }
      for (const e of shown.values()) {
        const tests = e.tests > 1 ? ` (${e.tests} tests)` : '';
        lines.push(`  ↓ |${module.project.name}| ${module.relativeModuleId} > ${e.name}${tests}${e.note ? ` — ${e.note}` : ''}`);
      }
    }
    if (count === 0) return;
    process.stdout.write(`\nSkipped: ${count} test${count === 1 ? '' : 's'}, and why (the note, or the name that says it):\n${lines.join('\n')}\n`);
  }
}
