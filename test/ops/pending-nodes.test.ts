// The pending report judges again only the nodes whose pods changed (src/ops/pending-nodes.ts), and explains afresh
// what a change elsewhere can alter: pods with pod (anti-)affinity or spread constraints, a changed pod with required
// (anti-)affinity terms, one naming a claim the pending pod names (ReadWriteOncePod counts its users everywhere). On
// random clusters, after each of a run of binds, deletes, resizes, relabels, nominations and pending pods bound, every
// entry equals the one computed afresh for the pod on its own, field for field, kube-scheduler's line byte for byte.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { ClusterStore } from '../../src/cluster/store.ts';
import type { AnyObject, PersistentVolumeClaim, Pod, PodDisruptionBudget } from '../../src/cluster/types.ts';
import type { ExtenderDeps } from '../../src/extender/deps.ts';
import { drain } from '../../src/ops/explain.ts';
import { explainPending } from '../../src/ops/pending.ts';
import { NodeFingerprints } from '../../src/ops/pending-nodes.ts';
import { PendingReport } from '../../src/ops/pending-report.ts';
import { storageView } from '../../src/ops/storage.ts';
import { claim, localPV, node, pod, storageClass } from '../helpers/objects.ts';
import { cluster } from './helpers.ts';

const ZONES = ['z0', 'z1'];
const NOW = Date.parse('2026-11-01T00:00:00Z');
const HOSTNAME = 'kubernetes.io/hostname';
const ZONE = 'topology.kubernetes.io/zone';

/** Mostly nothing: one pod that reads pods elsewhere is explained afresh at every change. */
const sometimes = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

const change = fc.record({
  what: fc.constantFrom(
    'bind',
    'bind',
    'bind',
    'unbind',
    'delete',
    'delete',
    'resize',
    'relabel',
    'status',
    'nominate',
    'place',
  ),
  // Refreshed after this change (else after the next ones too: a node whose pods came and went is not judged again).
  settle: fc.boolean(),
  // Event-loop turns the report works before the change (the interleaved test).
  turns: fc.nat(6),
  node: fc.nat(3),
  pod: fc.nat(7),
  cpu: fc.constantFrom('100m', '500m', '1', '2'),
  priority: fc.nat(2),
  // A bound pod's required anti-affinity against the pending pods (app0), by node or zone.
  antiAffinity: sometimes(fc.constantFrom(HOSTNAME, ZONE)),
  // A bound pod naming a pending pod's claim.
  usesClaim: sometimes(fc.nat(7)),
});

const world = fc.record({
  delegated: fc.boolean(),
  nodes: fc.array(fc.record({ cpu: fc.constantFrom('1', '2', '4') }), { minLength: 2, maxLength: 4 }),
  running: fc.array(
    fc.record({
      node: fc.nat(3),
      cpu: fc.constantFrom('500m', '1', '2'),
      priority: fc.nat(2),
      app: fc.nat(1),
      // Naming a pending pod's claim: that pod is explained on its own (pending-equivalence.ts).
      usesClaim: sometimes(fc.nat(7)),
    }),
    { maxLength: 6 },
  ),
  pvs: fc.array(fc.record({ node: fc.nat(3), size: fc.constantFrom(10, 50) }), { maxLength: 3 }),
  groups: fc.array(
    fc.record({
      cpu: fc.constantFrom('100m', '1', '2', '3'),
      priority: fc.nat(2),
      replicas: fc.integer({ min: 1, max: 3 }),
      claim: sometimes(fc.record({ size: fc.constantFrom(10, 20, 50), rwop: fc.boolean() })),
      affinity: sometimes(fc.nat(1)),
      antiAffinity: sometimes(fc.constantFrom(HOSTNAME, ZONE)),
      spread: sometimes(fc.nat(1)),
      never: fc.boolean(),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  pdb: fc.option(fc.nat(1), { nil: undefined }),
  changes: fc.array(change, { minLength: 1, maxLength: 8 }),
});

type World = typeof world extends fc.Arbitrary<infer T> ? T : never;
type Change = typeof change extends fc.Arbitrary<infer T> ? T : never;

const term = (app: string, topologyKey: string) => ({ labelSelector: { matchLabels: { app } }, topologyKey });

function build(w: World): { objects: AnyObject[]; claims: string[] } {
  const at = (i: number) => `n${i % w.nodes.length}`;
  const objects: AnyObject[] = [
    ...w.nodes.map((n, i) => node(`n${i}`, { zone: ZONES[i % 2], cpu: n.cpu })),
    storageClass('local'),
  ];
  w.pvs.forEach((v, i) => {
    objects.push(localPV(`pv-${i}`, at(v.node), { size: `${v.size}Gi` }));
  });
  const claims: string[] = [];
  w.groups.forEach((g, i) => {
    for (let r = 0; r < g.replicas; r++) {
      const name = `app${i}-${r}`;
      const names = g.claim ? [`data-${name}`] : [];
      const p = structuredClone(pod(name, { cpu: g.cpu, priority: g.priority * 100, claims: names }));
      p.metadata.labels = { app: `app${i}` };
      p.metadata.ownerReferences = [
        { apiVersion: 'apps/v1', kind: 'StatefulSet', name: `app${i}`, uid: `sts-${i}`, controller: true },
      ];
      if (g.never) p.spec.preemptionPolicy = 'Never';
      if (g.affinity !== undefined || g.antiAffinity !== undefined)
        p.spec.affinity = {
          ...(g.affinity !== undefined
            ? {
                podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term(g.affinity ? 'b' : 'a', ZONE)] },
              }
            : {}),
          ...(g.antiAffinity !== undefined
            ? { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term('a', g.antiAffinity)] } }
            : {}),
        };
      if (g.spread !== undefined)
        p.spec.topologySpreadConstraints = [
          {
            maxSkew: 1,
            topologyKey: g.spread ? HOSTNAME : ZONE,
            whenUnsatisfiable: 'DoNotSchedule',
            labelSelector: { matchLabels: { app: 'a' } },
          },
        ];
      objects.push(p);
      if (g.claim) {
        const pvc: PersistentVolumeClaim = structuredClone(claim(names[0], { size: `${g.claim.size}Gi` }));
        if (g.claim.rwop) pvc.spec.accessModes = ['ReadWriteOncePod'];
        objects.push(pvc);
        claims.push(names[0]);
      }
    }
  });
  w.running.forEach((r, i) => {
    const uses = r.usesClaim === undefined || claims.length === 0 ? [] : [claims[r.usesClaim % claims.length]];
    const p = pod(`run-${i}`, { nodeName: at(r.node), cpu: r.cpu, priority: r.priority * 100, claims: uses });
    p.metadata.labels = { app: r.app === 0 ? 'a' : 'b' };
    objects.push(p);
  });
  if (w.pdb !== undefined) {
    const pdb: PodDisruptionBudget = {
      kind: 'PodDisruptionBudget',
      metadata: { name: 'pdb', namespace: 'default', uid: 'uid-pdb', resourceVersion: '1' },
      spec: { selector: { matchLabels: { app: w.pdb ? 'b' : 'a' } } },
      status: { disruptionsAllowed: 0 },
    };
    objects.push(pdb as AnyObject);
  }
  return { objects, claims };
}

/** Applies `c` to the store (the pods bound by earlier changes in `bound`, newest last). */
function apply(store: ClusterStore, w: World, claims: string[], c: Change, bound: Pod[], version: () => string): void {
  const at = (i: number) => `n${i % w.nodes.length}`;
  const pods = [...store.list('Pod')];
  const running = pods.filter((p) => p.spec.nodeName);
  const pending = pods.filter((p) => !p.spec.nodeName);
  const some = (list: Pod[]) => (list.length > 0 ? list[c.pod % list.length] : undefined);
  if (c.what === 'bind') {
    const uses = c.usesClaim === undefined || claims.length === 0 ? [] : [claims[c.usesClaim % claims.length]];
    const p = structuredClone(
      pod(`bound-${bound.length}`, { nodeName: at(c.node), cpu: c.cpu, priority: c.priority * 100, claims: uses }),
    );
    p.metadata.labels = { app: c.priority % 2 === 0 ? 'a' : 'b' };
    p.metadata.resourceVersion = version();
    if (c.antiAffinity)
      p.spec.affinity = {
        podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term('app0', c.antiAffinity)] },
      };
    store.upsert('Pod', p);
    bound.push(p);
    return;
  }
  // The pod bound last goes again: its node holds what it held before.
  const last = bound.at(-1);
  if (c.what === 'unbind') {
    if (last && store.get('Pod', `default/${last.metadata.name}`)) store.delete('Pod', last);
    return;
  }
  const target = c.what === 'nominate' || c.what === 'place' ? some(pending) : some(running);
  if (!target) return;
  if (c.what === 'delete') {
    store.delete('Pod', target);
    return;
  }
  const p: Pod = structuredClone(target);
  p.metadata.resourceVersion = version();
  if (c.what === 'resize') p.spec.containers[0].resources = { requests: { cpu: c.cpu } };
  else if (c.what === 'relabel') p.metadata.labels = { app: p.metadata.labels?.app === 'a' ? 'b' : 'a' };
  else if (c.what === 'status') p.status = { ...p.status, conditions: [{ type: 'Ready', status: 'True' }] };
  else if (c.what === 'nominate')
    p.status = p.status?.nominatedNodeName
      ? { ...p.status, nominatedNodeName: undefined }
      : { ...p.status, nominatedNodeName: at(c.node) };
  else {
    p.spec.nodeName = at(c.node);
    p.status = { phase: 'Running' };
  }
  store.upsert('Pod', p);
}

/** Every entry as explaining its pod afresh writes it, and none out of date. */
function assertFresh(report: PendingReport, deps: ExtenderDeps, store: ClusterStore, what: string): void {
  const view = storageView(store);
  for (const item of report.snapshot().items) {
    const own = store.get('Pod', `${item.namespace}/${item.name}`)!;
    assert.deepEqual(item, drain(explainPending(deps, own, view, NOW)), `${what} ${item.name}`);
  }
  assert.equal(report.snapshot().stale, 0);
}

it('keeps every explanation equal to one computed afresh while pods are bound, deleted and changed', () => {
  let refreshed = 0;
  let changes = 0;
  fc.assert(
    fc.property(world, (w) => {
      const { objects, claims } = build(w);
      const { deps, store } = cluster(objects, { delegatedVolumeBinding: w.delegated });
      const report = new PendingReport(deps, { schedulerNames: ['default-scheduler'], now: () => NOW });
      report.start();
      report.runToEnd();
      let version = 100;
      const bound: Pod[] = [];
      w.changes.forEach((c, i) => {
        apply(store, w, claims, c, bound, () => String(version++));
        changes++;
        if (!c.settle && i < w.changes.length - 1) return;
        report.runToEnd();
        assertFresh(report, deps, store, c.what);
      });
      refreshed += report.refreshed;
      report.close();
    }),
    { numRuns: 250 },
  );
  // Not a vacuous pass: many changes were followed node by node.
  assert.ok(refreshed > changes / 8, `${refreshed} refreshes node by node for ${changes} changes`);
});

it('stays equal to explaining afresh when pods change while it is explaining, a step at a time', async () => {
  await fc.assert(
    fc.asyncProperty(world, async (w) => {
      const { objects, claims } = build(w);
      const { deps, store } = cluster(objects, { delegatedVolumeBinding: w.delegated });
      // A clock that moves a millisecond each time it is read, and 1.5 ms slices without rest: a slice takes one
      // step of an explanation, and a change lands between any two.
      let tick = 0;
      const report = new PendingReport(deps, {
        schedulerNames: ['default-scheduler'],
        now: () => NOW,
        clock: () => tick++,
        sliceMs: 1.5,
        dutyCycle: 1,
      });
      report.start();
      let version = 100;
      const bound: Pod[] = [];
      for (const c of w.changes) {
        for (let t = 0; t < c.turns; t++) await new Promise((resolve) => setImmediate(resolve));
        apply(store, w, claims, c, bound, () => String(version++));
      }
      await report.idle();
      assertFresh(report, deps, store, 'interleaved');
      report.close();
    }),
    { numRuns: 400 },
  );
});

it('judges again only the node a bind changed, and writes the line a full explain writes', () => {
  const objects: AnyObject[] = [node('n0', { cpu: '1' }), node('n1', { cpu: '1' }), node('n2', { cpu: '2' })];
  const waiting = structuredClone(pod('web-0', { cpu: '1500m', priority: 100 }));
  objects.push(waiting);
  const { deps, store } = cluster(objects);
  const report = new PendingReport(deps, { schedulerNames: ['default-scheduler'], now: () => NOW });
  report.start();
  report.runToEnd();
  assert.equal(report.snapshot().items[0].summary, '1/3 nodes are available');
  // A lower-priority pod bound to the one node with room: evicting it would make room again.
  const filler = pod('filler', { nodeName: 'n2', cpu: '1', priority: 0 });
  filler.metadata.resourceVersion = '7';
  store.upsert('Pod', filler);
  report.runToEnd();
  assert.equal(report.explained, 1, 'explained once, refreshed since');
  assert.equal(report.refreshed, 1);
  const [item] = report.snapshot().items;
  assert.equal(item.summary, '0/3 nodes are available: 3 Insufficient cpu.');
  assert.deepEqual(item.preemption, { helps: true, node: 'n2', victims: ['default/filler'] });
  assert.deepEqual(report.snapshot().items[0], drain(explainPending(deps, waiting, storageView(store), NOW)));
  report.close();
});

// NodeFingerprints keeps every placed pod of the cluster in typed-array slots, reused after a pod goes, and lets a node
// go once no pod is on it: whatever the order of adds and removes, a node's Fingerprint is the XOR over the pods on it
// now (uid and resourceVersion), and a node with none has the empty one.
it('a node’s fingerprint is that of the pods placed on it now, slots and nodes reused', () => {
  const slotOp = fc.record({
    pod: fc.integer({ min: 0, max: 11 }),
    remove: fc.boolean(),
    nodes: fc.array(fc.option(fc.constantFrom('n0', 'n1', 'n2', 'n3'), { nil: undefined }), { maxLength: 2 }),
    version: fc.integer({ min: 1, max: 3 }),
  });
  fc.assert(
    fc.property(fc.array(slotOp, { maxLength: 60 }), (ops) => {
      const prints = new NodeFingerprints();
      const placed = new Map<string, { version: string; nodes: string[] }>();
      for (const op of ops) {
        const p = {
          metadata: { uid: `uid-${op.pod}`, resourceVersion: String(op.version) },
          spec: {},
        } as unknown as Pod;
        if (op.remove) {
          prints.remove(p);
          placed.delete(p.metadata.uid);
          continue;
        }
        const nodes: string[] = [...new Set(op.nodes.filter((n) => n !== undefined))];
        prints.add(p, op.nodes);
        // Placed nowhere: add keeps what was there (its caller removed the pod before).
        if (nodes.length > 0) placed.set(p.metadata.uid, { version: p.metadata.resourceVersion!, nodes });
      }
      for (const node of ['n0', 'n1', 'n2', 'n3']) {
        const on = [...placed].filter(([, v]) => v.nodes.includes(node));
        const expected = new NodeFingerprints();
        for (const [uid, v] of on) {
          expected.add({ metadata: { uid, resourceVersion: v.version }, spec: {} } as unknown as Pod, [node]);
        }
        assert.deepEqual(prints.of(node), expected.of(node), node);
        if (on.length === 0) assert.deepEqual(prints.of(node), [0, 0], `${node} has no pods`);
      }
    }),
  );
});
