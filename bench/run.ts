// Runs every benchmark under bench/ one after another, each in its own process (its own heap and event loop, so one
// benchmark's garbage or timers cannot colour the next): bench/http-verbs.ts, then bench/volumes/*.ts and
// bench/live/*.ts when present. A file asks for Node flags with a first-line comment such as
// `// bench-flags: --expose-gc` (or, failing that, with the flags of a `// Run: .../node --flag bench/...` line in its
// header comment). Helper modules (synthetic.ts, fake-server-process.ts, any file whose first line is
// `// bench-helper`) are not run. Outputs are streamed as they come; a summary of exit codes and times ends the run.
//
// Run: npm run bench [-- <name-filter>... [--option value...]]   (e.g. `npm run bench -- results --nodes 1000`)
//      ./node_modules/.bin/node bench/run.ts [name-filter...] [--option value...]
// The words before the first `--option` choose benchmarks; that option and everything after it are passed to each
// chosen benchmark's command line (a lone `--` before them is dropped), so filter to the ones that take them.
// Exit status: 0 when every benchmark exited 0, 1 otherwise.
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Helper modules imported by benchmarks, not benchmarks themselves. */
const NOT_BENCHMARKS = new Set(['run.ts', 'synthetic.ts', 'fake-server-process.ts']);

async function listDir(sub: string): Promise<string[]> {
  try {
    const names = await readdir(new URL(`./${sub}/`, import.meta.url));
    return names
      .filter((n) => n.endsWith('.ts') && !n.endsWith('.d.ts') && !NOT_BENCHMARKS.has(n))
      .sort()
      .map((n) => `bench/${sub}/${n}`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * Node flags a benchmark asks for: a `// bench-flags: --expose-gc ...` comment on its first line; failing that, the
 * flags of a `// Run: ./node_modules/.bin/node --expose-gc bench/...` line in its header comment. Only `--` options.
 */
async function flagsOf(file: string): Promise<string[]> {
  const lines = (await readFile(new URL(`../${file}`, import.meta.url), 'utf8')).split('\n', 40);
  const only = (flags: string) => flags.split(/\s+/).filter((f) => f.startsWith('--'));
  const declared = /^\/\/\s*bench-flags:\s*(.*)$/.exec(lines[0]);
  if (declared) return only(declared[1]);
  for (const line of lines) {
    if (!line.startsWith('//')) break; // the header comment ended
    const run = /^\/\/\s*Run:\s*\S*node((?:\s+--\S+)*)\s+bench\//.exec(line);
    if (run) return only(run[1]);
  }
  return [];
}

/** Modules that benchmarks import and that do no work of their own say so with `// bench-helper` on line 1. */
async function isHelper(file: string): Promise<boolean> {
  const first = (await readFile(new URL(`../${file}`, import.meta.url), 'utf8')).split('\n', 1)[0];
  return /^\/\/\s*bench-helper\b/.test(first);
}

function runOne(
  file: string,
  flags: string[],
  args: string[],
): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, file, ...args], { cwd: root, stdio: 'inherit' });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.once('SIGINT', forward);
    process.once('SIGTERM', forward);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      resolve({ code, signal });
    });
  });
}

const argv = process.argv.slice(2);
const firstOption = argv.findIndex((a) => a.startsWith('--'));
const filters = firstOption < 0 ? argv : argv.slice(0, firstOption);
const forwarded = firstOption < 0 ? [] : argv.slice(argv[firstOption] === '--' ? firstOption + 1 : firstOption);
const candidates = [
  'bench/results.ts',
  'bench/http-verbs.ts',
  'bench/analysis.ts',
  ...(await listDir('volumes')),
  ...(await listDir('live')),
];
const files: string[] = [];
for (const file of candidates) {
  if (filters.length > 0 && !filters.some((f) => file.includes(f))) continue;
  if (await isHelper(file)) continue;
  files.push(file);
}
if (files.length === 0) {
  console.error(`no benchmark matches ${filters.join(', ')}`);
  process.exit(1);
}

console.log(
  `node ${process.version} (${process.execPath}); ${files.length} benchmark(s): ${files.join(', ')}` +
    (forwarded.length ? `; arguments for each: ${forwarded.join(' ')}` : ''),
);
const results: { file: string; code: number | null; signal: string | null; seconds: number }[] = [];
for (const file of files) {
  const flags = await flagsOf(file);
  console.log(
    `\n━━ ${file}${flags.length ? ` (${flags.join(' ')})` : ''}${forwarded.length ? ` ${forwarded.join(' ')}` : ''} ━━`,
  );
  const started = performance.now();
  const { code, signal } = await runOne(file, flags, forwarded);
  results.push({ file, code, signal, seconds: (performance.now() - started) / 1000 });
}

console.log('\n━━ summary ━━');
for (const r of results) {
  const outcome = r.code === 0 ? 'ok' : r.signal ? `killed by ${r.signal}` : `exit ${r.code}`;
  console.log(`  ${outcome.padEnd(8)} ${r.seconds.toFixed(1).padStart(6)} s  ${r.file}`);
}
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
