// Fuzz soak: many more malformed bodies per verb than `npm test` sends (test/http/fuzz.test.ts), over app.inject,
// asserting no 5xx, then that a valid filter still gets the answer it got before, and the heap after a GC.
// Not run by `npm run bench` (it measures no speed); run it by hand after touching validation or the verbs:
// Run: ./node_modules/.bin/node --expose-gc bench/fuzz-soak.ts [--runs 20000] [--seed N]
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { createTestExtender } from '../test/helpers/extender.ts';
import { fuzzBodies, fuzzCluster, postVerb, VALID, VERBS } from '../test/helpers/fuzz.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20000' }, seed: { type: 'string' } } });
const runs = Number(values.runs);
const seed = values.seed === undefined ? Date.now() : Number(values.seed);
const t = await createTestExtender(fuzzCluster(), { bindTimeoutSeconds: 1 });
const validFilter = async () => (await postVerb(t.extender.app, 'filter', JSON.stringify(VALID.filter[0]))).body;
const answer = await validFilter();
const heap = () => {
  globalThis.gc?.();
  return Math.round(process.memoryUsage().heapUsed / 2 ** 20);
};
const heapBefore = heap();
let failed = false;
for (const verb of VERBS) {
  const statuses = new Map<number, number>();
  const started = performance.now();
  const result = await fc.check(
    fc.asyncProperty(fuzzBodies(verb), async (body) => {
      const res = await postVerb(t.extender.app, verb, body);
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      return res.statusCode < 500;
    }),
    { numRuns: runs, seed },
  );
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`${verb}: ${runs} bodies in ${seconds} s, statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  if (result.failed) {
    failed = true;
    console.log(`  a 5xx (seed ${seed}): ${JSON.stringify(result.counterexample)?.slice(0, 2000)}`);
  }
}
const same = (await validFilter()) === answer;
console.log(`a valid filter afterwards: ${same ? 'same answer as before' : 'DIFFERENT answer'}`);
console.log(`heap: ${heapBefore} MiB before, ${heap()} MiB after (seed ${seed})`);
await t.close();
process.exit(failed || !same ? 1 : 0);
