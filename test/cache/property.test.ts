// Property: whatever the order of events, every NodeInfo equals a from-scratch recomputation from the pods the cache
// holds, the state machine matches a tiny reference model, generations only grow, and snapshots equal fresh ones.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { NodeInfoCache } from '../../src/cache/cache.ts';
import { type NodeInfo, newNodeInfo } from '../../src/cache/node-info.ts';
import type { Snapshot } from '../../src/cache/snapshot.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { Pod, Volume } from '../../src/cluster/types.ts';
import { makeNode, makePod } from '../helpers/objects.ts';

const POD_NAMES = ['p0', 'p1', 'p2', 'p3', 'p4'];
const NODE_NAMES = ['n0', 'n1', 'n2'];

const volumeArb: fc.Arbitrary<Volume> = fc.oneof(
  fc.constantFrom('c0', 'c1').map((claimName) => ({ name: `pvc-${claimName}`, persistentVolumeClaim: { claimName } })),
  fc.constant({ name: 'eph', ephemeral: { volumeClaimTemplate: { spec: {} } } }),
  fc
    .constantFrom('h0', 'h1')
    .map((volumeHandle) => ({ name: `csi-${volumeHandle}`, csi: { driver: 'd', volumeHandle } })),
);

const requestsArb = fc.option(
  fc.record(
    {
      cpu: fc.constantFrom('0', '100m', '1', '1500m'),
      memory: fc.constantFrom('0', '1Mi', '1Gi'),
      'example.com/gpu': fc.constantFrom('1', '2'),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);

const podSpecArb = fc.record({
  requests: requestsArb,
  init: fc.array(fc.record({ sidecar: fc.boolean(), requests: requestsArb }), { maxLength: 2 }),
  overhead: fc.option(fc.constant({ cpu: '10m', memory: '1Mi' }), { nil: undefined }),
  hostPort: fc.option(fc.constantFrom(80, 443), { nil: undefined }),
  volumes: fc.array(volumeArb, { maxLength: 2 }),
});
type PodSpec = typeof podSpecArb extends fc.Arbitrary<infer T> ? T : never;

// Each object built is a new version: the store drops an update whose resourceVersion it already holds.
let version = 0;
const nextVersion = () => String(++version);

function buildPod(name: string, node: string | undefined, s: PodSpec, phase?: string): Pod {
  return makePod(name, {
    resourceVersion: nextVersion(),
    nodeName: node,
    phase,
    containers: [
      {
        name: 'c',
        resources: s.requests ? { requests: s.requests } : undefined,
        ports: s.hostPort ? [{ containerPort: 1, hostPort: s.hostPort }] : undefined,
      },
    ],
    initContainers: s.init.map((c, i) => ({
      name: `i${i}`,
      restartPolicy: c.sidecar ? 'Always' : undefined,
      resources: c.requests ? { requests: c.requests } : undefined,
    })),
    overhead: s.overhead,
    volumes: s.volumes,
  });
}

const podIdx = fc.constantFrom(...POD_NAMES);
const nodeIdx = fc.constantFrom(...NODE_NAMES);
const zoneArb = fc.constantFrom('za', 'zb');

type Op =
  | { op: 'assume' | 'add' | 'update'; pod: string; node: string; spec: PodSpec }
  | { op: 'finish' | 'remove'; pod: string }
  | { op: 'forget'; pod: string; node: string }
  | { op: 'addNode'; node: string; zone: string; cpu: string }
  | { op: 'removeNode'; node: string }
  | { op: 'snapshot' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constantFrom('assume', 'add', 'update' as const), pod: podIdx, node: nodeIdx, spec: podSpecArb }),
  fc.record({ op: fc.constantFrom('finish', 'remove' as const), pod: podIdx }),
  fc.record({ op: fc.constant('forget' as const), pod: podIdx, node: nodeIdx }),
  fc.record({ op: fc.constant('addNode' as const), node: nodeIdx, zone: zoneArb, cpu: fc.constantFrom('1', '2') }),
  fc.record({ op: fc.constant('removeNode' as const), node: nodeIdx }),
  fc.constant({ op: 'snapshot' as const }),
);

/** A NodeInfo as comparable plain data. */
function plain(info: NodeInfo) {
  const sorted = <V>(m: ReadonlyMap<string, V>) => [...m].sort(([a], [b]) => a.localeCompare(b));
  return {
    name: info.name,
    node: info.node?.metadata.resourceVersion,
    pods: [...info.pods.keys()].sort(),
    allocatable: info.allocatable,
    requested: info.requested,
    nonZeroRequested: info.nonZeroRequested,
    usedPorts: sorted(info.usedPorts),
    imageStates: sorted(info.imageStates),
    pvcRefCounts: sorted(info.pvcRefCounts),
    csiVolumes: sorted(info.csiVolumes).map(([d, s]) => [d, [...s].sort()]),
  };
}

/** Every NodeInfo in the cache equals one rebuilt from the pods the cache says it holds. */
function assertAggregatesRecompute(cache: NodeInfoCache): void {
  const byNode = new Map<string, Pod[]>();
  for (const name of POD_NAMES) {
    const pod = cache.getPod(`uid-${name}`);
    if (pod) byNode.set(pod.spec.nodeName!, [...(byNode.get(pod.spec.nodeName!) ?? []), pod]);
  }
  for (const name of NODE_NAMES) {
    const info = cache.nodeInfo(name);
    const pods = byNode.get(name) ?? [];
    if (!info) {
      assert.equal(pods.length, 0, `pods on ${name} but no NodeInfo`);
      continue;
    }
    assert.ok(info.node || pods.length > 0, `empty ghost ${name} kept`);
    assert.deepEqual(plain(info), plain(newNodeInfo(info.node, pods, name)));
  }
}

function assertSnapshotIsFresh(s: Snapshot, cache: NodeInfoCache): void {
  const fresh = cache.snapshot();
  assert.deepEqual(s.list().map(plain), fresh.list().map(plain));
  assert.deepEqual(
    s.list().map((n) => n.name),
    cache.nodeNames(),
  );
  for (const key of ['default/c0', 'default/c1']) assert.equal(s.isPVCUsedByPods(key), fresh.isPVCUsedByPods(key));
}

interface ModelPod {
  node: string;
  assumed: boolean;
}

describe('cache properties', () => {
  it('after any sequence of events, aggregates equal a recomputation, states follow the model, generations grow', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
        const cache = new NodeInfoCache();
        const model = new Map<string, ModelPod>();
        const nodes = new Set<string>();
        const snap = cache.snapshot();
        let frozen: { info: NodeInfo; was: ReturnType<typeof plain> } | undefined;
        let lastGen = cache.generation();
        for (const o of ops) {
          const uid = 'pod' in o ? `uid-${o.pod}` : '';
          const m = model.get(uid);
          let shouldThrow = false;
          let run: () => void;
          switch (o.op) {
            case 'assume':
              shouldThrow = !!m;
              run = () => cache.assumePod(buildPod(o.pod, o.node, o.spec));
              if (!shouldThrow) model.set(uid, { node: o.node, assumed: true });
              break;
            case 'add':
              shouldThrow = !!m && !m.assumed;
              run = () => cache.addPod(buildPod(o.pod, o.node, o.spec));
              if (!shouldThrow) model.set(uid, { node: o.node, assumed: false });
              break;
            case 'update': {
              shouldThrow = !m || m.assumed;
              const old = cache.getPod(uid) ?? buildPod(o.pod, o.node, o.spec);
              run = () => cache.updatePod(old, buildPod(o.pod, o.node, o.spec));
              if (!shouldThrow) model.set(uid, { node: o.node, assumed: false });
              break;
            }
            case 'finish':
              run = () => cache.finishBinding(cache.getPod(uid) ?? makePod(o.pod));
              break;
            case 'remove':
              shouldThrow = !m;
              run = () => cache.removePod(cache.getPod(uid) ?? makePod(o.pod));
              model.delete(uid);
              break;
            case 'forget':
              shouldThrow = !!m && (m.node !== o.node || !m.assumed);
              run = () => cache.forgetPod(makePod(o.pod, { nodeName: o.node }));
              if (m && !shouldThrow) model.delete(uid);
              break;
            case 'addNode':
              run = () => cache.addNode(makeNode(o.node, { zone: o.zone, allocatable: { cpu: o.cpu } }));
              nodes.add(o.node);
              break;
            case 'removeNode':
              shouldThrow = !nodes.has(o.node) && ![...model.values()].some((p) => p.node === o.node);
              run = () => cache.removeNode(makeNode(o.node));
              nodes.delete(o.node);
              break;
            case 'snapshot':
              run = () => {
                if (frozen) assert.deepEqual(plain(frozen.info), frozen.was, 'a NodeInfo handed out changed');
                cache.updateSnapshot(snap);
                assertSnapshotIsFresh(snap, cache);
                const first = snap.list()[0];
                frozen = first ? { info: first, was: plain(first) } : undefined;
              };
              break;
          }
          if (shouldThrow) assert.throws(run, `${o.op} should have been refused`);
          else run();

          assertAggregatesRecompute(cache);
          assert.equal(cache.podCount(), model.size);
          for (const [u, p] of model) {
            assert.equal(cache.isAssumed(u), p.assumed);
            assert.equal(cache.getPod(u)?.spec.nodeName, p.node);
          }
          assert.deepEqual(new Set(cache.nodeNames()), nodes);
          assert.ok(cache.generation() >= lastGen, 'generation went back');
          lastGen = cache.generation();
        }
        cache.updateSnapshot(snap);
        assertSnapshotIsFresh(snap, cache);
      }),
      { numRuns: 300 },
    );
  });

  it('fed only by the store, the cache holds exactly the assigned non-terminal pods the store holds', () => {
    const eventArb = fc.oneof(
      fc.record({
        kind: fc.constant('pod' as const),
        pod: podIdx,
        node: fc.option(nodeIdx, { nil: undefined }),
        phase: fc.constantFrom(undefined, 'Running', 'Succeeded'),
        spec: podSpecArb,
        del: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('node' as const), node: nodeIdx, zone: zoneArb, del: fc.boolean() }),
    );
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 60 }), (events) => {
        const store = new ClusterStore();
        const cache = new NodeInfoCache();
        cache.attach(store);
        for (const e of events) {
          if (e.kind === 'node') {
            if (e.del) store.delete('Node', makeNode(e.node));
            else store.upsert('Node', makeNode(e.node, { zone: e.zone, resourceVersion: nextVersion() }));
          } else if (e.del) {
            store.delete('Pod', makePod(e.pod));
          } else {
            store.upsert('Pod', buildPod(e.pod, e.node, e.spec, e.phase));
          }
          assertAggregatesRecompute(cache);
          const expected = [...store.list('Pod')]
            .filter((p) => p.spec.nodeName && p.status?.phase !== 'Succeeded')
            .map((p) => `${p.metadata.uid}@${p.spec.nodeName}`)
            .sort();
          const actual = POD_NAMES.flatMap((n) => {
            const p = cache.getPod(`uid-${n}`);
            return p ? [`${p.metadata.uid}@${p.spec.nodeName}`] : [];
          }).sort();
          assert.deepEqual(actual, expected);
          assert.deepEqual(new Set(cache.nodeNames()), new Set([...store.list('Node')].map((n) => n.metadata.name)));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('with our binds mixed into the watch, added pods are exactly the store’s bound pods and assumed ones are not', () => {
    const stepArb = fc.oneof(
      fc.record({
        kind: fc.constant('pod' as const),
        pod: podIdx,
        node: fc.option(nodeIdx, { nil: undefined }),
        phase: fc.constantFrom(undefined, 'Failed'),
        spec: podSpecArb,
        del: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('node' as const), node: nodeIdx, zone: zoneArb, del: fc.boolean() }),
      fc.record({
        kind: fc.constantFrom('assume', 'forget', 'finish' as const),
        pod: podIdx,
        node: nodeIdx,
        spec: podSpecArb,
      }),
    );
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 60 }), (steps) => {
        const store = new ClusterStore();
        const cache = new NodeInfoCache();
        cache.attach(store);
        for (const s of steps) {
          if (s.kind === 'node') {
            if (s.del) store.delete('Node', makeNode(s.node));
            else store.upsert('Node', makeNode(s.node, { zone: s.zone, resourceVersion: nextVersion() }));
          } else if (s.kind === 'pod') {
            if (s.del) store.delete('Pod', makePod(s.pod));
            else store.upsert('Pod', buildPod(s.pod, s.node, s.spec, s.phase));
          } else {
            const pod = buildPod(s.pod, s.node, s.spec);
            try {
              if (s.kind === 'assume') cache.assumePod(pod);
              else if (s.kind === 'forget') cache.forgetPod(pod);
              else cache.finishBinding(pod);
            } catch {
              // Refusals are the state machine's business (tested above); the invariants below must still hold.
            }
          }
          assertAggregatesRecompute(cache);
          const bound = new Map(
            [...store.list('Pod')]
              .filter((p) => p.spec.nodeName && p.status?.phase !== 'Failed')
              .map((p) => [p.metadata.uid, p]),
          );
          for (const name of POD_NAMES) {
            const uid = `uid-${name}`;
            const cached = cache.getPod(uid);
            if (cache.isAssumed(uid)) assert.ok(!bound.has(uid), `${name} bound in the store but still assumed`);
            else if (cached)
              assert.equal(cached.spec.nodeName, bound.get(uid)?.spec.nodeName, `${name} added off-store`);
            else assert.ok(!bound.has(uid), `${name} bound in the store but missing from the cache`);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
