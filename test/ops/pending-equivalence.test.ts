// The pending report explains equivalent pods once (src/ops/pending-equivalence.ts). On random clusters whose pending
// pods are replicas with claims alike in content, some of which something else names (a PV's claimRef, a running
// pod, a second pending pod), or missing, bound, being deleted or lost, and some nominated: every pod's entry equals
// the entry computed for that pod on its own, field for field.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { AnyObject, PersistentVolumeClaim, Pod, PodDisruptionBudget } from '../../src/cluster/types.ts';
import { drain } from '../../src/ops/explain.ts';
import { explainPending } from '../../src/ops/pending.ts';
import { PendingReport } from '../../src/ops/pending-report.ts';
import { storageView } from '../../src/ops/storage.ts';
import { claim, localPV, makeCSIStorageCapacity, node, pod, storageClass } from '../helpers/objects.ts';
import { cluster } from './helpers.ts';

const ZONES = ['z0', 'z1', 'z2'];
const NOW = Date.parse('2026-11-01T00:00:00Z');
const ODDITIES = ['missing', 'bound', 'deleting', 'lost', 'named-by-pending'] as const;

/** Mostly nothing: a claim something else names is the exception, or no pod would share. */
const sometimes = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

const world = fc.record({
  nodes: fc.array(fc.record({ zone: fc.nat(2), cpu: fc.constantFrom('1', '2', '4') }), { minLength: 1, maxLength: 4 }),
  running: fc.array(
    fc.record({
      node: fc.nat(3),
      cpu: fc.constantFrom('500m', '1', '2'),
      priority: fc.nat(2),
      usesClaim: sometimes(fc.nat(11)),
    }),
    { maxLength: 5 },
  ),
  pvs: fc.array(
    fc.record({
      node: fc.option(fc.nat(3), { nil: undefined }),
      size: fc.constantFrom(10, 20, 50, 60),
      preBoundTo: fc.option(fc.nat(11), { nil: undefined, freq: 2 }),
    }),
    { maxLength: 6 },
  ),
  capacities: fc.array(fc.record({ zone: fc.nat(2), size: fc.integer({ min: 0, max: 100 }) }), { maxLength: 2 }),
  groups: fc.array(
    fc.record({
      cpu: fc.constantFrom('100m', '1', '3'),
      priority: fc.nat(2),
      replicas: fc.integer({ min: 1, max: 4 }),
      claims: fc.array(
        fc.record({
          cls: fc.constantFrom('local', 'fast', 'immediate'),
          size: fc.constantFrom(10, 20, 50),
          rwop: fc.boolean(),
        }),
        { maxLength: 2 },
      ),
      nominated: fc.option(fc.nat(3), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  // `pair`: the next claim too (often the same template's claim of the next replica).
  oddities: fc.array(fc.record({ claim: fc.nat(11), what: fc.constantFrom(...ODDITIES), pair: fc.boolean() }), {
    maxLength: 3,
  }),
  pdb: fc.boolean(),
});

type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

function build(w: World): { objects: AnyObject[]; pending: Pod[] } {
  const nodes = w.nodes.map((n, i) => node(`n${i}`, { zone: ZONES[n.zone], cpu: n.cpu }));
  const objects: AnyObject[] = [
    ...nodes,
    storageClass('local'),
    storageClass('fast', { provisioner: 'fast.csi' }),
    storageClass('immediate', { provisioner: 'imm.csi', mode: 'Immediate' }),
  ];
  const at = (i: number) => `n${i % nodes.length}`;
  // Every pending pod's claims, in order: what the PVs, running pods and oddities name by index.
  const claimNames: string[] = [];
  const claims = new Map<string, PersistentVolumeClaim>();
  const pending: Pod[] = [];
  w.groups.forEach((g, i) => {
    for (let r = 0; r < g.replicas; r++) {
      const name = `app${i}-${r}`;
      const names = g.claims.map((_, k) => `c${k}-${name}`);
      const p = structuredClone(pod(name, { cpu: g.cpu, priority: g.priority * 100, claims: names }));
      // One StatefulSet's replicas: the same spec, labels and controller; claims from its templates.
      p.metadata.labels = { app: `app${i}` };
      p.metadata.ownerReferences = [
        { apiVersion: 'apps/v1', kind: 'StatefulSet', name: `app${i}`, uid: `sts-${i}`, controller: true },
      ];
      if (g.nominated !== undefined && r === 0) p.status = { ...p.status, nominatedNodeName: at(g.nominated) };
      pending.push(p);
      g.claims.forEach((c, k) => {
        const pvc = structuredClone(claim(names[k], { className: c.cls, size: `${c.size}Gi` }));
        if (c.rwop) pvc.spec.accessModes = ['ReadWriteOncePod'];
        claimNames.push(names[k]);
        claims.set(names[k], pvc);
      });
    }
  });
  const named = (i: number) => (claimNames.length > 0 ? claimNames[i % claimNames.length] : undefined);
  w.pvs.forEach((v, i) => {
    const pv = structuredClone(localPV(`pv-${i}`, at(v.node ?? 0), { size: `${v.size}Gi` }));
    if (v.node === undefined) delete pv.spec.nodeAffinity;
    const to = v.preBoundTo === undefined ? undefined : named(v.preBoundTo);
    if (to) pv.spec.claimRef = { namespace: 'default', name: to };
    objects.push(pv);
  });
  w.running.forEach((r, i) => {
    const uses = r.usesClaim === undefined ? undefined : named(r.usesClaim);
    const p = pod(`run-${i}`, {
      nodeName: at(r.node),
      cpu: r.cpu,
      priority: r.priority * 100,
      claims: uses ? [uses] : [],
    });
    p.metadata.labels = { app: 'run' };
    objects.push(p);
  });
  w.capacities.forEach((c, i) => {
    objects.push(
      makeCSIStorageCapacity(`cap-${i}`, {
        namespace: 'kube-system',
        className: 'fast',
        capacity: `${c.size}Gi`,
        nodeTopology: { matchLabels: { 'topology.kubernetes.io/zone': ZONES[c.zone] } },
      }) as AnyObject,
    );
  });
  const odd = w.oddities.flatMap((o) => (o.pair ? [o, { ...o, claim: o.claim + 1 }] : [o]));
  for (const [k, o] of odd.entries()) {
    const name = named(o.claim);
    const pvc = name ? claims.get(name) : undefined;
    if (!name || !pvc) continue;
    if (o.what === 'missing') claims.delete(name);
    else if (o.what === 'bound') {
      pvc.spec.volumeName = 'pv-0';
      pvc.status = { phase: 'Bound' };
    } else if (o.what === 'deleting') pvc.metadata.deletionTimestamp = '2026-10-31T00:00:00Z';
    else if (o.what === 'lost') pvc.status = { phase: 'Lost' };
    else pending.push(pod(`other-${k}`, { claims: [name] }));
  }
  if (w.pdb) {
    const pdb: PodDisruptionBudget = {
      kind: 'PodDisruptionBudget',
      metadata: { name: 'run', namespace: 'default', uid: 'uid-pdb', resourceVersion: '1' },
      spec: { selector: { matchLabels: { app: 'run' } } },
      status: { disruptionsAllowed: 0 },
    };
    objects.push(pdb as AnyObject);
  }
  objects.push(...claims.values(), ...pending);
  return { objects, pending };
}

it('gives every pod sharing an explanation the entry it would get on its own', () => {
  let pods = 0;
  let explained = 0;
  fc.assert(
    fc.property(world, (w) => {
      const { objects, pending } = build(w);
      const { deps, store } = cluster(objects);
      const report = new PendingReport(deps, { schedulerNames: ['default-scheduler'], now: () => NOW });
      report.start();
      report.runToEnd();
      report.close();
      const { items, waiting } = report.snapshot();
      assert.equal(waiting, 0);
      assert.equal(items.length, pending.length);
      pods += items.length;
      explained += report.explained;
      const view = storageView(store);
      for (const item of items) {
        const own = store.get('Pod', `${item.namespace}/${item.name}`)!;
        const alone = drain(explainPending(deps, own, view, NOW));
        assert.deepEqual(item, alone, item.name);
      }
    }),
    { numRuns: 200 },
  );
  // Not a vacuous pass: pods did share explanations.
  assert.ok(explained < pods * 0.9, `${explained} explanations for ${pods} pods`);
});

it('explains replicas whose claims are anonymous once, and a replica whose claim a PV names on its own', () => {
  const objects: AnyObject[] = [
    node('n0', { cpu: '1' }),
    storageClass('local'),
    localPV('pv-a', 'n0', { size: '5Gi' }),
  ];
  const replicas = ['web-0', 'web-1', 'web-2'].map((name) => {
    const p = structuredClone(pod(name, { cpu: '2', claims: [`www-${name}`] }));
    p.metadata.labels = { app: 'web' };
    objects.push(p, claim(`www-${name}`, { size: '20Gi' }));
    return p;
  });
  let { deps } = cluster(objects);
  let report = new PendingReport(deps, { schedulerNames: ['default-scheduler'] }).start();
  report.runToEnd();
  assert.equal(report.explained, 1);
  assert.deepEqual(
    report.snapshot().items.map((p) => p.claims[0].claim),
    replicas.map((p) => `www-${p.metadata.name}`),
    'each pod lists its own claim',
  );
  report.close();
  // pv-a pre-bound to www-web-1: that claim has a PV of its own to look at, the others do not.
  const preBound = structuredClone(objects[2]) as AnyObject & { spec: { claimRef?: object } };
  preBound.spec.claimRef = { namespace: 'default', name: 'www-web-1' };
  ({ deps } = cluster([objects[0], objects[1], preBound, ...objects.slice(3)]));
  report = new PendingReport(deps, { schedulerNames: ['default-scheduler'] }).start();
  report.runToEnd();
  assert.equal(report.explained, 2);
  report.close();
});
