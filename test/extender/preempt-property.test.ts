// A property of the preempt verb over random clusters, candidates and victims, against an independent oracle of the
// two volume rules in play (a ReadWriteOncePod claim is free once every pod using it is gone; a node's CSI attach
// limit counts the distinct volumes of the pods left plus the preemptor's new ones):
// every answered UID is a pod on that node below the preemptor's priority; every victim the scheduler sent is still
// there; victims are ordered most important first; NumPDBViolations equals a recomputation; a kept node fits once its
// victims are gone; a node is dropped only if evicting every lower-priority pod on it would not make the pod fit.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { pino } from 'pino';
import { NodeInfoCache } from '../../src/cache/cache.ts';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import { Nominator } from '../../src/cache/nominator.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { AnyObject, Kind, Pod, PodDisruptionBudget } from '../../src/cluster/types.ts';
import type { ClusterWriter } from '../../src/cluster/writer.ts';
import type { ExtenderDeps } from '../../src/extender/deps.ts';
import { preempt } from '../../src/extender/preempt.ts';
import { Framework } from '../../src/framework/runner.ts';
import { buildVolumePlugins } from '../../src/plugins/index.ts';
import { makeCSINode, makeNode, makePod, makePV, makePVC } from '../helpers/objects.ts';

const DRIVER = 'csi.example.com';
const LOGGER = pino({ level: 'silent' });

const podSpec = fc.record({
  priority: fc.integer({ min: 0, max: 10 }).map((p) => p * 10),
  started: fc.integer({ min: 0, max: 5 }),
  app: fc.constantFrom('a' as const, 'b' as const, '' as const),
  csi: fc.integer({ min: 0, max: 2 }),
  rwop: fc.boolean(),
});

const world = fc.record({
  nodes: fc.array(
    fc.record({ limit: fc.option(fc.integer({ min: 1, max: 4 })), pods: fc.array(podSpec, { maxLength: 5 }) }),
    { minLength: 1, maxLength: 3 },
  ),
  preemptor: fc.record({
    priority: fc.integer({ min: 0, max: 11 }).map((p) => p * 10 - 5),
    newCSI: fc.integer({ min: 0, max: 2 }),
    rwopPicks: fc.array(fc.nat(), { maxLength: 2 }),
  }),
  pdbs: fc.array(
    fc.record({
      app: fc.constantFrom('a', 'b'),
      allowed: fc.integer({ min: 0, max: 2 }),
      disrupted: fc.array(fc.nat()),
    }),
    { maxLength: 2 },
  ),
  /** per node: whether it is a candidate, and which lower-priority pods the scheduler chose */
  choices: fc.array(fc.record({ candidate: fc.boolean(), picks: fc.array(fc.boolean(), { maxLength: 5 }) }), {
    minLength: 3,
    maxLength: 3,
  }),
});

type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

function pvAndClaim(name: string, accessMode: string, csi: boolean): AnyObject[] {
  return [
    makePV(`pv-${name}`, {
      className: '',
      size: '1Gi',
      phase: 'Bound',
      spec: { accessModes: [accessMode], ...(csi ? { csi: { driver: DRIVER, volumeHandle: name } } : {}) },
    }),
    makePVC(name, {
      className: '',
      volumeName: `pv-${name}`,
      size: '1Gi',
      bindCompleted: true,
      phase: 'Bound',
      spec: { accessModes: [accessMode] },
    }),
  ];
}

function podObject(
  name: string,
  nodeName: string | undefined,
  priority: number,
  claims: string[],
  app = '',
  started = 0,
): Pod {
  return makePod(name, {
    nodeName,
    priority,
    claims,
    ...(app ? { labels: { app } } : {}),
    startTime: new Date(Date.UTC(2026, 0, 1, 0, started)).toISOString(),
  });
}

interface Built {
  objects: AnyObject[];
  preemptor: Pod;
  pods: Pod[];
  pdbs: PodDisruptionBudget[];
  limits: Map<string, number>;
  candidates: Record<string, string[]>;
}

function build(w: World): Built {
  const objects: AnyObject[] = [];
  const pods: Pod[] = [];
  const limits = new Map<string, number>();
  const rwopClaims: string[] = [];
  w.nodes.forEach((n, i) => {
    const name = `n${i}`;
    objects.push(makeNode(name));
    if (n.limit !== null) {
      limits.set(name, n.limit);
      objects.push(makeCSINode(name, { drivers: [{ name: DRIVER, nodeID: name, allocatable: { count: n.limit } }] }));
    }
    n.pods.forEach((p, j) => {
      const podName = `p${i}-${j}`;
      const claims: string[] = [];
      for (let k = 0; k < p.csi; k++) {
        claims.push(`csi-${podName}-${k}`);
        objects.push(...pvAndClaim(`csi-${podName}-${k}`, 'ReadWriteOnce', true));
      }
      if (p.rwop) {
        claims.push(`rwop-${podName}`);
        rwopClaims.push(`rwop-${podName}`);
        objects.push(...pvAndClaim(`rwop-${podName}`, 'ReadWriteOncePod', false));
      }
      const pod = podObject(podName, name, p.priority, claims, p.app, p.started);
      pods.push(pod);
      objects.push(pod);
    });
  });
  const claims: string[] = [];
  for (let k = 0; k < w.preemptor.newCSI; k++) {
    claims.push(`new-${k}`);
    objects.push(...pvAndClaim(`new-${k}`, 'ReadWriteOnce', true));
  }
  for (const pick of w.preemptor.rwopPicks) {
    const c = rwopClaims[pick % Math.max(1, rwopClaims.length)];
    if (c && !claims.includes(c)) claims.push(c);
  }
  const preemptor = podObject('preemptor', undefined, w.preemptor.priority, claims);
  const pdbs: PodDisruptionBudget[] = w.pdbs.map((d, i) => ({
    kind: 'PodDisruptionBudget',
    metadata: { name: `pdb-${i}`, namespace: 'default', uid: `uid-pdb-${i}`, resourceVersion: '1' },
    spec: { selector: { matchLabels: { app: d.app } } },
    status: {
      disruptionsAllowed: d.allowed,
      disruptedPods: Object.fromEntries(
        d.disrupted.map((k) => [pods[k % Math.max(1, pods.length)]?.metadata.name ?? 'x', 't']),
      ),
    },
  }));
  objects.push(...pdbs);
  const candidates: Record<string, string[]> = {};
  w.nodes.forEach((_, i) => {
    const choice = w.choices[i]!;
    if (!choice.candidate) return;
    const lower = pods.filter((p) => p.spec.nodeName === `n${i}` && p.spec.priority! < preemptor.spec.priority!);
    // kube-scheduler sends its victims most important first.
    candidates[`n${i}`] = lower
      .filter((_, k) => choice.picks[k])
      .sort((a, c) => c.spec.priority! - a.spec.priority! || a.status!.startTime!.localeCompare(c.status!.startTime!))
      .map((p) => p.metadata.uid);
  });
  return { objects, preemptor, pods, pdbs, limits, candidates };
}

function deps(objects: AnyObject[]): ExtenderDeps {
  const store = new ClusterStore();
  for (const o of objects) store.upsert(o.kind as Kind, o as never);
  const cache = new NodeInfoCache({ logger: LOGGER });
  cache.attach(store);
  const nominator = new Nominator(store);
  nominator.attach(store);
  const plugins = buildVolumePlugins({ store, writer: {} as ClusterWriter });
  return {
    framework: new Framework(plugins, { nominator }),
    cache,
    nominator,
    store,
    writer: {} as ClusterWriter,
    logger: LOGGER,
    nodeInfoForUnknownNode: (node) => newNodeInfo(node),
  };
}

const claimsOf = (p: Pod) => (p.spec.volumes ?? []).map((v) => v.persistentVolumeClaim!.claimName);

/** The oracle: does the preemptor fit on the node once `evicted` are gone? */
function fits(b: Built, nodeName: string, evicted: ReadonlySet<string>): boolean {
  const own = claimsOf(b.preemptor);
  for (const c of own.filter((c) => c.startsWith('rwop-'))) {
    if (b.pods.some((p) => !evicted.has(p.metadata.uid) && claimsOf(p).includes(c))) return false;
  }
  const limit = b.limits.get(nodeName);
  if (limit === undefined) return true;
  const attached = new Set<string>();
  for (const p of b.pods) {
    if (p.spec.nodeName !== nodeName || evicted.has(p.metadata.uid)) continue;
    for (const c of claimsOf(p)) if (c.startsWith('csi-')) attached.add(c);
  }
  const fresh = own.filter((c) => !c.startsWith('rwop-') && !attached.has(c));
  if (fresh.length === 0) return true;
  return attached.size + fresh.length <= limit;
}

/** PDB violations recomputed the plain way, victims most important first. */
function violations(victims: Pod[], pdbs: PodDisruptionBudget[]): number {
  const left = pdbs.map((d) => d.status!.disruptionsAllowed!);
  let n = 0;
  for (const v of victims) {
    let violated = false;
    pdbs.forEach((d, i) => {
      const app = d.spec.selector!.matchLabels!.app;
      if (v.metadata.labels?.app !== app || d.status!.disruptedPods![v.metadata.name]) return;
      if (--left[i]! < 0) violated = true;
    });
    if (violated) n++;
  }
  return n;
}

it("preempt answers only lower-priority pods of the node, keeps the scheduler's victims, orders and counts them, and drops only nodes no eviction fixes", () => {
  fc.assert(
    fc.property(world, (w) => {
      const b = build(w);
      const d = deps(b.objects);
      const byUID = new Map(b.pods.map((p) => [p.metadata.uid, p]));
      const args = {
        Pod: b.preemptor as never,
        NodeNameToVictims: null,
        NodeNameToMetaVictims: Object.fromEntries(
          // kube-scheduler's own count for its victims (what a pass-through answer repeats).
          Object.entries(b.candidates).map(([n, v]) => [
            n,
            {
              Pods: v.map((UID) => ({ UID })),
              NumPDBViolations: violations(
                v.map((u) => byUID.get(u)!),
                b.pdbs,
              ),
            },
          ]),
        ),
      };
      const answer = preempt(args, d).NodeNameToMetaVictims ?? {};
      const priority = b.preemptor.spec.priority!;
      for (const [nodeName, sent] of Object.entries(b.candidates)) {
        const got = answer[nodeName];
        const lower = b.pods.filter((p) => p.spec.nodeName === nodeName && p.spec.priority! < priority);
        if (!got) {
          const all = new Set([...lower.map((p) => p.metadata.uid), ...sent]);
          assert.ok(!fits(b, nodeName, all), `${nodeName} dropped although evicting every lower-priority pod fits`);
          continue;
        }
        const victims = (got.Pods ?? []).map((v) => byUID.get(v.UID)!);
        for (const v of victims) {
          assert.ok(v, 'every answered UID is a known pod');
          assert.equal(v.spec.nodeName, nodeName, 'on that node');
          assert.ok(v.spec.priority! < priority, 'below the preemptor');
        }
        const answered = new Set(victims.map((v) => v.metadata.uid));
        for (const uid of sent) assert.ok(answered.has(uid), `the scheduler's victim ${uid} is kept`);
        for (let i = 1; i < victims.length; i++) {
          const [a, c] = [victims[i - 1]!, victims[i]!];
          const ordered =
            a.spec.priority! > c.spec.priority! ||
            (a.spec.priority === c.spec.priority && a.status!.startTime! <= c.status!.startTime!);
          assert.ok(ordered, 'most important first');
        }
        assert.equal(got.NumPDBViolations, violations(victims, b.pdbs));
        if (claimsOf(b.preemptor).length > 0)
          assert.ok(fits(b, nodeName, answered), `${nodeName} kept but does not fit`);
        if (sent.length === 0 && victims.length === 0) assert.deepEqual(got.Pods, []);
      }
      for (const nodeName of Object.keys(answer)) assert.ok(nodeName in b.candidates, 'only candidates are answered');
    }),
    { numRuns: 150 },
  );
});
