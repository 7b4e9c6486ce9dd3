// Runs every test file under test/ with node:test and fails when a test fails or when no test ran at all,
// so a glob that silently matches nothing can never turn CI green.
import { glob } from 'node:fs/promises';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { kubeComponents } from './components/components.ts';

const only = process.argv.slice(2);
const files = only.length > 0 ? only : (await Array.fromAsync(glob('test/**/*.test.ts'))).sort();
if (files.length === 0) {
  console.error('test/run.ts: no test files matched test/**/*.test.ts');
  process.exit(1);
}

// The real control plane's components are built (or found in the cache) before any test file starts: a first build
// takes minutes, longer than any test's timeout, and one build serves every file.
const { skip } = await kubeComponents((line) => console.log(`test/run.ts: ${line}`));
if (skip) console.log(`test/run.ts: the real-control-plane suites will skip: ${skip}`);

let passed = 0;
let failed = 0;
const stream = run({ files, concurrency: 2, timeout: 120_000 });
stream.on('test:pass', (event) => {
  if (event.details.type !== 'suite') passed++;
});
stream.on('test:fail', (event) => {
  if (event.details.type !== 'suite') failed++;
});
stream.on('end', () => {
  if (passed + failed === 0) {
    console.error('test/run.ts: zero tests ran');
    process.exitCode = 1;
  } else if (failed > 0) {
    process.exitCode = 1;
  }
});
stream.compose(spec).pipe(process.stdout);
