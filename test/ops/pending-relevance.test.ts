// The pending report leaves explanations a change cannot alter as they are (src/ops/pending-relevance.ts): a running
// pod's update that the store's trimmed pod does not show changes nothing, a change of its labels only matters to
// pods with pod (anti-)affinity, spread constraints, or victims to name. On random clusters, after each of a run of
// such changes (and some that change more), every entry equals the one computed afresh for the pod on its own.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { AnyObject, Pod, PodDisruptionBudget } from '../../src/cluster/types.ts';
import { drain } from '../../src/ops/explain.ts';
import { explainPending } from '../../src/ops/pending.ts';
import { onlyLabelsChanged } from '../../src/ops/pending-relevance.ts';
import { PendingReport } from '../../src/ops/pending-report.ts';
import { storageView } from '../../src/ops/storage.ts';
import { node, pod } from '../helpers/objects.ts';
import { cluster } from './helpers.ts';

const ZONES = ['z0', 'z1'];
const NOW = Date.parse('2026-11-01T00:00:00Z');
const APPS = ['a', 'b'];

/** Half the pods without: one pod that reads other pods' labels makes every change a refresh. */
const sometimes = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 2 });

const world = fc.record({
  // Zones alternate, so that spreading over them has something to count.
  nodes: fc.array(fc.record({ cpu: fc.constantFrom('1', '2', '4') }), { minLength: 2, maxLength: 4 }),
  running: fc.array(
    fc.record({ node: fc.nat(3), cpu: fc.constantFrom('500m', '1'), priority: fc.nat(2), app: fc.nat(1) }),
    { minLength: 1, maxLength: 6 },
  ),
  pending: fc.array(
    fc.record({
      cpu: fc.constantFrom('100m', '1', '2'),
      priority: fc.nat(2),
      affinity: sometimes(fc.nat(1)),
      antiAffinity: sometimes(fc.nat(1)),
      spread: sometimes(fc.nat(1)),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  pdb: fc.option(fc.nat(1), { nil: undefined }),
  changes: fc.array(
    fc.record({ pod: fc.nat(5), what: fc.constantFrom('relabel', 'relabel', 'status', 'status', 'cpu') }),
    { minLength: 1, maxLength: 6 },
  ),
});

type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

/** Run first, so that the count of changes that left every explanation as it was never rests on the seed alone. */
const keeping: World = {
  nodes: [{ cpu: '1' }, { cpu: '1' }],
  running: [{ node: 0, cpu: '500m', priority: 0, app: 0 }],
  pending: [{ cpu: '2', priority: 0, affinity: undefined, antiAffinity: undefined, spread: undefined }],
  pdb: undefined,
  changes: [
    { pod: 0, what: 'status' },
    { pod: 0, what: 'relabel' },
  ],
};

function build(w: World): AnyObject[] {
  const objects: AnyObject[] = w.nodes.map((n, i) => node(`n${i}`, { zone: ZONES[i % 2], cpu: n.cpu }));
  w.running.forEach((r, i) => {
    const p = pod(`run-${i}`, { nodeName: `n${r.node % w.nodes.length}`, cpu: r.cpu, priority: r.priority * 100 });
    p.metadata.labels = { app: APPS[r.app] };
    objects.push(p);
  });
  w.pending.forEach((q, i) => {
    const p = structuredClone(pod(`pending-${i}`, { cpu: q.cpu, priority: q.priority * 100 }));
    p.metadata.labels = { app: 'pending' };
    const term = (app: number, topologyKey: string) => ({
      labelSelector: { matchLabels: { app: APPS[app] } },
      topologyKey,
    });
    if (q.affinity !== undefined || q.antiAffinity !== undefined)
      p.spec.affinity = {
        ...(q.affinity !== undefined
          ? {
              podAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [term(q.affinity, 'topology.kubernetes.io/zone')],
              },
            }
          : {}),
        ...(q.antiAffinity !== undefined
          ? {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [term(q.antiAffinity, 'kubernetes.io/hostname')],
              },
            }
          : {}),
      };
    if (q.spread !== undefined)
      p.spec.topologySpreadConstraints = [
        {
          maxSkew: 1,
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'DoNotSchedule',
          labelSelector: { matchLabels: { app: APPS[q.spread] } },
        },
      ];
    objects.push(p);
  });
  if (w.pdb !== undefined) {
    const pdb: PodDisruptionBudget = {
      kind: 'PodDisruptionBudget',
      metadata: { name: 'pdb', namespace: 'default', uid: 'uid-pdb', resourceVersion: '1' },
      spec: { selector: { matchLabels: { app: APPS[w.pdb] } } },
      status: { disruptionsAllowed: 0 },
    };
    objects.push(pdb as AnyObject);
  }
  return objects;
}

it('keeps every explanation equal to one computed afresh while running pods change', () => {
  let kept = 0;
  fc.assert(
    fc.property(world, (w) => {
      const { deps, store } = cluster(build(w));
      const report = new PendingReport(deps, { schedulerNames: ['default-scheduler'], now: () => NOW });
      report.start();
      report.runToEnd();
      let version = 100;
      for (const c of w.changes) {
        const old = store.get('Pod', `default/run-${c.pod % w.running.length}`)!;
        const next: Pod = structuredClone(old);
        next.metadata.resourceVersion = String(version++);
        if (c.what === 'relabel') next.metadata.labels = { app: old.metadata.labels?.app === 'a' ? 'b' : 'a' };
        else if (c.what === 'cpu') next.spec.containers[0].resources = { requests: { cpu: '1500m' } };
        // 'status': conditions the store does not keep.
        else next.status = { ...next.status, conditions: [{ type: 'Ready', status: String(version % 2 === 0) }] };
        const before = report.explained;
        store.upsert('Pod', next);
        report.runToEnd();
        if (c.what !== 'cpu' && report.explained === before) kept++;
        const view = storageView(store);
        for (const item of report.snapshot().items) {
          const own = store.get('Pod', `${item.namespace}/${item.name}`)!;
          assert.deepEqual(item, drain(explainPending(deps, own, view, NOW)), `${c.what} ${item.name}`);
        }
        assert.equal(report.snapshot().stale, 0);
      }
      report.close();
    }),
    { numRuns: 200, examples: [[keeping]] },
  );
  assert.ok(kept > 0, 'some changes left every explanation as it was');
});

it('tells a change of labels alone from one of more', () => {
  const a = pod('p', { nodeName: 'n0' });
  const status = { ...a, metadata: { ...a.metadata, resourceVersion: '2' } };
  const relabelled = { ...status, metadata: { ...status.metadata, labels: { app: 'x' } } };
  const moved = { ...a, spec: { ...a.spec, priority: 5 } };
  assert.ok(onlyLabelsChanged(a, status));
  assert.ok(onlyLabelsChanged(a, relabelled));
  assert.ok(!onlyLabelsChanged(a, moved));
  assert.ok(!onlyLabelsChanged(relabelled, { ...moved, metadata: relabelled.metadata }));
});
