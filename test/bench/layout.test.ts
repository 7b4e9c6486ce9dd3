// bench/ holds benchmarks and the helpers they import or spawn. bench/run.ts runs the benchmarks its table lists (the
// others, marked byHand, are listed too); a helper says so with `// bench-helper` on its first line. These tests keep
// the table, the markers and the files in agreement, so `npm run bench` never starts a helper (a server that listens
// forever) and never forgets a benchmark.
import assert from 'node:assert/strict';
import { glob, readFile } from 'node:fs/promises';
import { basename, posix } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BENCHMARKS } from '../../bench/run.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const files = (await Array.fromAsync(glob('bench/**/*.ts', { cwd: root })))
  .filter((f) => !f.startsWith('bench/out/'))
  .sort();
const text = new Map(await Promise.all(files.map(async (f) => [f, await readFile(root + f, 'utf8')] as const)));
const isHelper = (f: string) => /^\/\/ bench-helper\n/.test(text.get(f)!);
const listed = new Set(BENCHMARKS.map((b) => b.file));

/** Bench files that `from`-import or name (spawn) `file`, other than itself and run.ts. */
function users(file: string): string[] {
  const name = basename(file);
  return files.filter((f) => f !== file && f !== 'bench/run.ts' && text.get(f)!.includes(name));
}

/** The files under the repository's root that `file` imports by a relative path. */
function imports(file: string): string[] {
  return [...text.get(file)!.matchAll(/^(?:import|export) [^;]*? from '(\.{1,2}\/[^']+)'/gm)].map((m) =>
    posix.join(posix.dirname(file), m[1]),
  );
}

describe('bench/ layout', () => {
  it('lists every benchmark once, by a file that exists, under a name of its own', () => {
    assert.equal(listed.size, BENCHMARKS.length);
    assert.equal(new Set(BENCHMARKS.map((b) => b.name)).size, BENCHMARKS.length);
    for (const b of BENCHMARKS) assert.ok(text.has(b.file), `${b.file} (${b.name}) is not a file under bench/`);
  });

  it('marks every file the table does not list as a helper, and no listed benchmark', () => {
    for (const f of files) {
      if (f === 'bench/run.ts') assert.ok(!isHelper(f));
      else if (listed.has(f)) assert.ok(!isHelper(f), `${f} is a benchmark in bench/run.ts but says // bench-helper`);
      else assert.ok(isHelper(f), `${f}: neither in bench/run.ts's table nor marked // bench-helper on line 1`);
    }
  });

  it('has every helper imported or spawned by a benchmark or another helper', () => {
    for (const f of files.filter(isHelper)) assert.ok(users(f).length > 0, `${f} is a helper nobody uses`);
  });

  it('guards the main of a benchmark that others import', () => {
    for (const f of listed) {
      const importers = files.filter((g) => imports(g).includes(f));
      if (importers.length === 0) continue;
      assert.ok(/^if \(import\.meta\.main\)/m.test(text.get(f)!), `${f} is imported by ${importers.join(', ')}`);
    }
  });

  it("gives each benchmark run.ts runs the Node flags its header's Run: line shows", () => {
    for (const b of BENCHMARKS.filter((x) => !x.byHand)) {
      const run = new RegExp(`^// Run: \\S*node((?: --\\S+)*) ${b.file.replace(/[./]/g, '\\$&')}`, 'm').exec(
        text.get(b.file)!,
      );
      assert.ok(run, `${b.file} has no // Run: line naming itself`);
      assert.deepEqual(run[1].trim().split(' ').filter(Boolean), b.flags, b.file);
    }
  });

  it("has no `// bench-flags:` line (run.ts's table holds the flags)", () => {
    for (const f of files) assert.doesNotMatch(text.get(f)!.split('\n', 1)[0], /bench-flags/, f);
  });
});
