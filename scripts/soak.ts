// Runs test suites again and again on a loaded machine and counts failures per suite: a race that only load exposes
// (CI runs on a loaded 2-core machine) shows up here before it fails a submission. Not part of `npm test`.
//
//   npm run test:soak -- [--runs N] [--busy K] [--npm-test] [FILE ...]
//
// Each run is `node test/run.ts FILE ...` (default: every test/e2e suite) with a fresh random SEED, or with
// --npm-test the whole `npm test`. K busy processes (default 2, `nice`d) spin beside the runs. A failed run's output is
// kept in a temporary folder, named at the end. Exits 1 when any run failed.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync } from 'node:fs';
import { glob } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    runs: { type: 'string', default: '10' },
    busy: { type: 'string', default: '2' },
    'npm-test': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log('usage: node scripts/soak.ts [--runs N] [--busy K] [--npm-test] [FILE ...]');
  process.exit(0);
}
const runs = Number(values.runs);
const busy = Number(values.busy);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a whole number >= 1, not ${values.runs}`);
if (!Number.isInteger(busy) || busy < 0) throw new Error(`--busy must be a whole number >= 0, not ${values.busy}`);
if (values['npm-test'] && positionals.length > 0) throw new Error('--npm-test runs every suite: name no FILE');
const files = positionals.length > 0 ? positionals : (await Array.fromAsync(glob('test/e2e/*.test.ts'))).sort();
if (files.length === 0) throw new Error('no test file matched');

const node = process.execPath;
const spinners: ChildProcess[] = Array.from({ length: busy }, () =>
  spawn('nice', ['-n', '10', node, '-e', 'for (;;) {}'], { stdio: 'ignore' }),
);
const stopSpinners = () => {
  for (const s of spinners) s.kill('SIGKILL');
};
process.on('exit', stopSpinners);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

const logs = mkdtempSync(join(tmpdir(), 'soak-'));
/** Suite file → runs in which one of its tests failed. */
const failures = new Map<string, number>();
const seconds: number[] = [];
let failedRuns = 0;

interface RunResult {
  code: number;
  passed: number;
  failed: number;
  failedFiles: Set<string>;
}

/** One run, its output to `logFile`; counts from node:test's closing lines and its failing-test locations. */
function runOnce(seed: number, logFile: string): Promise<RunResult> {
  const [command, args] = values['npm-test'] ? ['npm', ['test']] : [node, ['test/run.ts', ...files]];
  const child = spawn(command, args, {
    env: {
      ...process.env,
      SEED: String(seed),
      PATH: `${join(process.cwd(), 'node_modules/.bin')}:${process.env.PATH}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = createWriteStream(logFile);
  let text = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', (chunk: Buffer) => {
      out.write(chunk);
      text += chunk.toString();
    });
  }
  return new Promise((resolve) => {
    child.on('close', (code) => {
      out.end();
      const count = (word: string) => Number(text.match(new RegExp(`^ℹ ${word} (\\d+)$`, 'm'))?.[1] ?? 0);
      const failedFiles = new Set([...text.matchAll(/^test at (\S+?):\d+:\d+$/gm)].map((m) => m[1]));
      resolve({ code: code ?? 1, passed: count('pass'), failed: count('fail'), failedFiles });
    });
  });
}

const what = values['npm-test'] ? 'npm test' : `${files.length} suite(s)`;
console.log(`soak: ${runs} run(s) of ${what}, ${busy} busy process(es) beside them; logs in ${logs}`);
for (let run = 1; run <= runs; run++) {
  const seed = Math.floor(Math.random() * 100_000);
  const started = performance.now();
  const load = loadavg()[0].toFixed(1);
  const logFile = join(logs, `run-${run}-seed-${seed}.log`);
  const r = await runOnce(seed, logFile);
  const took = (performance.now() - started) / 1000;
  seconds.push(took);
  const ok = r.code === 0 && r.failed === 0 && r.passed > 0;
  if (!ok) failedRuns++;
  for (const f of r.failedFiles) failures.set(f, (failures.get(f) ?? 0) + 1);
  const where = r.failedFiles.size > 0 ? ` in ${[...r.failedFiles].join(', ')}` : '';
  console.log(
    `run ${run}/${runs} seed ${seed}: ${ok ? 'ok' : `FAILED (exit ${r.code})${where}, log ${logFile}`}, ` +
      `${r.passed} passed, ${r.failed} failed, ${took.toFixed(0)} s, load ${load} at start`,
  );
}

const sorted = [...seconds].sort((a, b) => a - b);
console.log(
  `soak: ${runs - failedRuns}/${runs} runs green; time per run min ${sorted[0].toFixed(0)} s, ` +
    `median ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} s, max ${sorted.at(-1)!.toFixed(0)} s`,
);
for (const [file, n] of [...failures].sort()) console.log(`  ${file}: failed in ${n} of ${runs} runs`);
stopSpinners();
process.exitCode = failedRuns > 0 ? 1 : 0;
