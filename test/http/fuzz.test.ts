// Fuzzing the verbs: arbitrary JSON and mutated valid requests never get a 5xx, and afterwards a valid filter is
// still answered from a consistent cache. bench/fuzz-soak.ts runs the same with many more bodies.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { fuzzBodies, fuzzCluster, postVerb, VALID, VERBS } from '../helpers/fuzz.ts';

const RUNS_PER_VERB = 2_000;

const validFilter = () =>
  t.request.post('/scheduler/filter').set('Content-Type', 'application/json').send(JSON.stringify(VALID.filter[0]));

let t: TestExtender;
let before200: unknown;
before(async () => {
  t = await createTestExtender(fuzzCluster(), { bindTimeoutSeconds: 1 });
  const res = await validFilter();
  assert.equal(res.status, 200);
  before200 = res.body;
});
after(() => t.close());

for (const verb of VERBS) {
  it(`${verb}: ${RUNS_PER_VERB} malformed bodies, never a 5xx`, async () => {
    await fc.assert(
      fc.asyncProperty(fuzzBodies(verb), async (body) => {
        const res = await postVerb(t.extender.app, verb, body);
        assert.ok(res.statusCode < 500, `${res.statusCode} ${res.body} for ${body.slice(0, 500)}`);
      }),
      { numRuns: RUNS_PER_VERB },
    );
  });
}

it('after the fuzzing, a valid filter gets the answer it got before', async () => {
  const res = await validFilter();
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, before200);
  assert.deepEqual(
    (res.body as { NodeNames: string[] }).NodeNames,
    ['node-a'],
    'node-b has one local PV for two claims',
  );
});
