// Verbs that arrive before the extender has listed the cluster (just started, kube-scheduler already retrying) get an
// error, never a verdict from an empty view: a real kube-scheduler marked such pods unschedulable ("node ... is not in
// the extender's cache") and left them waiting for some cluster event.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { claim, localPV, node, pod, storageClass } from '../helpers/objects.ts';

let t: TestExtender;
before(async () => {
  t = await createTestExtender(
    [
      node('node-a'),
      storageClass('local'),
      localPV('pv-a', 'node-a'),
      claim('data', { className: 'local' }),
      pod('app', { claims: ['data'] }),
    ],
    {},
    { start: false },
  );
});
after(() => t.close());

const args = () => ({ Pod: pod('app', { claims: ['data'] }), NodeNames: ['node-a'], Nodes: null });

it('answers every verb 503 until the cluster is listed, then decides from the listed state', async () => {
  for (const [verb, body] of [
    ['filter', args()],
    ['prioritize', args()],
    [
      'preempt',
      { Pod: args().Pod, NodeNameToMetaVictims: { 'node-a': { Pods: [{ UID: 'x' }], NumPDBViolations: 0 } } },
    ],
    ['bind', { PodName: 'app', PodNamespace: 'default', PodUID: 'uid-app', Node: 'node-a' }],
  ] as const) {
    const res = await t.request.post(`/scheduler/${verb}`).send(body);
    assert.equal(res.status, 503, verb);
    assert.match(res.body.message, /has not listed the cluster yet/, verb);
  }
  const metrics = await t.request.get('/metrics');
  assert.match(metrics.text, /topology_extender_verb_dropped_total\{verb="filter",reason="not_synced"\} 1/);

  await t.extender.start();
  const res = await t.request.post('/scheduler/filter').send(args());
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.NodeNames, ['node-a'], 'the PV on node-a is seen once listed');
});
