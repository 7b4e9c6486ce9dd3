// The pending report judges again only the nodes whose pods changed (src/ops/pending-nodes.ts), and explains afresh
// what a change elsewhere can alter: pods with pod (anti-)affinity or spread constraints, a changed pod with required
// (anti-)affinity terms, one naming a claim the pending pod names (ReadWriteOncePod counts its users everywhere). On
// random clusters, after each of a run of binds, deletes, resizes, relabels, nominations and pending pods bound, every
// entry equals the one computed afresh for the pod on its own, field for field, kube-scheduler's line byte for byte.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { AnyObject, PersistentVolumeClaim, Pod, PodDisruptionBudget } from '../../src/cluster/types.ts';
import { drain } from '../../src/ops/explain.ts';
import { explainPending } from '../../src/ops/pending.ts';
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
  what: fc.constantFrom('bind', 'bind', 'bind', 'delete', 'delete', 'resize', 'relabel', 'status', 'nominate', 'place'),
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
      let seq = 0;
      const at = (i: number) => `n${i % w.nodes.length}`;
      for (const c of w.changes) {
        const running = [...store.list('Pod')].filter((p) => p.spec.nodeName);
        const pending = [...store.list('Pod')].filter((p) => !p.spec.nodeName);
        const some = (pods: Pod[]) => (pods.length > 0 ? pods[c.pod % pods.length] : undefined);
        const next = (p: Pod) => {
          const copy: Pod = structuredClone(p);
          copy.metadata.resourceVersion = String(version++);
          return copy;
        };
        const target = c.what === 'nominate' || c.what === 'place' ? some(pending) : some(running);
        if (c.what === 'bind') {
          const uses = c.usesClaim === undefined || claims.length === 0 ? [] : [claims[c.usesClaim % claims.length]];
          const p = structuredClone(
            pod(`bound-${seq++}`, { nodeName: at(c.node), cpu: c.cpu, priority: c.priority * 100, claims: uses }),
          );
          p.metadata.labels = { app: c.priority % 2 === 0 ? 'a' : 'b' };
          p.metadata.resourceVersion = String(version++);
          if (c.antiAffinity)
            p.spec.affinity = {
              podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term('app0', c.antiAffinity)] },
            };
          store.upsert('Pod', p);
        } else if (!target) continue;
        else if (c.what === 'delete') store.delete('Pod', target);
        else {
          const p = next(target);
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
        changes++;
        report.runToEnd();
        const view = storageView(store);
        for (const item of report.snapshot().items) {
          const own = store.get('Pod', `${item.namespace}/${item.name}`)!;
          assert.deepEqual(item, drain(explainPending(deps, own, view, NOW)), `${c.what} ${item.name}`);
        }
        assert.equal(report.snapshot().stale, 0);
      }
      refreshed += report.refreshed;
      report.close();
    }),
    { numRuns: 250 },
  );
  // Not a vacuous pass: many changes were followed node by node.
  assert.ok(refreshed > changes / 4, `${refreshed} refreshes node by node for ${changes} changes`);
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
