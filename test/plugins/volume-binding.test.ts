// volume_binding_test.go (TestVolumeBinding) through the plugin, plus reserve/preBind/unreserve and the rules this
// project adds: cached decisions per (pod, node), shared reservations per pod UID, never booking a PV twice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { VolumeBindingPlugin } from '../../src/plugins/volume-binding.ts';
import { buildCapacityScorer, type ShapePoint } from '../../src/volumes/scorer.ts';
import { makeNode, makePod, makePV, makePVC, makeStorageClass } from '../helpers/objects.ts';
import { TestCluster } from '../volumes/fixtures.ts';
import { nodeInfo } from './helpers.ts';

/** A 1Gi (or `size`) claim of the WaitForFirstConsumer class the cases use. */
const waitClaim = (name: string, size = '1Gi') => makePVC(name, { className: 'wait-sc', size });

const immediateSC = makeStorageClass('immediate-sc', { mode: 'Immediate' });
const waitSC = makeStorageClass('wait-sc');
const waitHDDSC = makeStorageClass('wait-hdd-sc');

const VOLUME_CAPACITY_PRIORITY: ShapePoint[] = [
  { utilization: 0, score: 0 },
  { utilization: 100, score: 10 },
];

function setup(
  objects: (PersistentVolume | PersistentVolumeClaim | Node | Pod | StorageClass)[],
  shape = VOLUME_CAPACITY_PRIORITY,
) {
  const cluster = new TestCluster([immediateSC, waitSC, waitHDDSC, ...objects]);
  const plugin = new VolumeBindingPlugin(cluster.binder(5), buildCapacityScorer(shape));
  return { cluster, plugin };
}

const view = (s: { code: string; reasons: readonly string[] }) => [s.code, ...s.reasons];
const BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind";
const NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity";

describe('TestVolumeBinding', () => {
  const zones = (z: string) => ({
    'topology.kubernetes.io/region': `region-${z}`,
    'topology.kubernetes.io/zone': `zone-${z}`,
  });
  const zonalNodes = ['a', 'b', 'c'].flatMap((z) => [
    makeNode(`zone-${z}-node-a`, { labels: zones(z) }),
    makeNode(`zone-${z}-node-b`, { labels: zones(z) }),
  ]);
  const zonalPVs = [
    makePV('pv-a-0', {
      className: 'wait-sc',
      phase: 'Available',
      size: '200Gi',
      affinity: { 'topology.kubernetes.io/region': ['region-a'], 'topology.kubernetes.io/zone': ['zone-a'] },
    }),
    makePV('pv-a-1', {
      className: 'wait-sc',
      phase: 'Available',
      size: '200Gi',
      affinity: { 'topology.kubernetes.io/region': ['region-a'], 'topology.kubernetes.io/zone': ['zone-a'] },
    }),
    makePV('pv-b-0', {
      className: 'wait-sc',
      phase: 'Available',
      size: '100Gi',
      affinity: { 'topology.kubernetes.io/region': ['region-b'], 'topology.kubernetes.io/zone': ['zone-b'] },
    }),
    makePV('pv-b-1', {
      className: 'wait-sc',
      phase: 'Available',
      size: '100Gi',
      affinity: { 'topology.kubernetes.io/region': ['region-b'], 'topology.kubernetes.io/zone': ['zone-b'] },
    }),
  ];
  const host = (n: string) => ({ 'kubernetes.io/hostname': [n] });
  const table: {
    name: string;
    pod: Pod;
    nodes: Node[];
    pvcs?: PersistentVolumeClaim[];
    pvs?: PersistentVolume[];
    shape?: ShapePoint[];
    wantPreFilter?: [string, ...string[]];
    wantFilter?: ([string, ...string[]] | null)[];
    wantScores?: number[];
  }[] = [
    {
      name: 'pod has not pvcs',
      pod: makePod('pod-a', { claims: [] }),
      nodes: [makeNode('node-a')],
      wantPreFilter: ['Skip'],
      wantFilter: [null],
    },
    {
      name: 'all bound',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: [makeNode('node-a')],
      pvcs: [makePVC('pvc-a', { className: 'wait-sc', volumeName: 'pv-a', bindCompleted: true })],
      pvs: [makePV('pv-a', { className: 'wait-sc', phase: 'Available' })],
      wantFilter: [null],
    },
    {
      name: 'all bound with local volumes',
      pod: makePod('pod-a', { claims: ['pvc-a', 'pvc-b'] }),
      nodes: [makeNode('node-a')],
      pvcs: [
        makePVC('pvc-a', { className: 'wait-sc', volumeName: 'pv-a', bindCompleted: true }),
        makePVC('pvc-b', { className: 'wait-sc', volumeName: 'pv-b', bindCompleted: true }),
      ],
      pvs: [
        makePV('pv-a', { className: 'wait-sc', phase: 'Bound', affinity: host('node-a') }),
        makePV('pv-b', { className: 'wait-sc', phase: 'Bound', affinity: host('node-a') }),
      ],
      wantFilter: [null],
    },
    {
      name: 'PVC does not exist',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: [makeNode('node-a')],
      wantPreFilter: ['UnschedulableAndUnresolvable', 'persistentvolumeclaim "pvc-a" not found'],
    },
    {
      name: 'Part of PVCs do not exist',
      pod: makePod('pod-a', { claims: ['pvc-a', 'pvc-b'] }),
      nodes: [makeNode('node-a')],
      pvcs: [makePVC('pvc-a', { className: 'wait-sc', volumeName: 'pv-a', bindCompleted: true })],
      wantPreFilter: ['UnschedulableAndUnresolvable', 'persistentvolumeclaim "pvc-b" not found'],
    },
    {
      name: 'immediate claims not bound',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: [makeNode('node-a')],
      pvcs: [makePVC('pvc-a', { className: 'immediate-sc' })],
      wantPreFilter: ['UnschedulableAndUnresolvable', 'pod has unbound immediate PersistentVolumeClaims'],
    },
    {
      name: 'unbound claims no matches',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: [makeNode('node-a')],
      pvcs: [makePVC('pvc-a', { className: 'wait-sc' })],
      wantFilter: [['UnschedulableAndUnresolvable', BIND_CONFLICT]],
    },
    {
      name: 'bound and unbound unsatisfied',
      pod: makePod('pod-a', { claims: ['pvc-a', 'pvc-b'] }),
      nodes: [makeNode('node-a', { labels: { foo: 'barbar' } })],
      pvcs: [
        makePVC('pvc-a', { className: 'wait-sc', volumeName: 'pv-a', bindCompleted: true }),
        makePVC('pvc-b', { className: 'wait-sc' }),
      ],
      pvs: [makePV('pv-a', { className: 'wait-sc', phase: 'Available', affinity: { foo: ['bar'] } })],
      wantFilter: [['UnschedulableAndUnresolvable', NODE_CONFLICT, BIND_CONFLICT]],
    },
    {
      name: 'pvc not found',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: [makeNode('node-a')],
      wantPreFilter: ['UnschedulableAndUnresolvable', 'persistentvolumeclaim "pvc-a" not found'],
    },
    {
      name: 'pv not found',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: [makeNode('node-a')],
      pvcs: [makePVC('pvc-a', { className: 'wait-sc', volumeName: 'pv-a', bindCompleted: true })],
      wantFilter: [
        ['UnschedulableAndUnresolvable', 'node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)'],
      ],
    },
    {
      name: 'pv not found claim lost',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: [makeNode('node-a')],
      pvcs: [makePVC('pvc-a', { className: 'wait-sc', volumeName: 'pv-a', bindCompleted: true, phase: 'Lost' })],
      wantPreFilter: [
        'UnschedulableAndUnresolvable',
        'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',
      ],
    },
    {
      name: 'local volumes with close capacity are preferred',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: [makeNode('node-a'), makeNode('node-b'), makeNode('node-c')],
      pvcs: [waitClaim('pvc-a', '50Gi')],
      pvs: [
        makePV('pv-a-0', { className: 'wait-sc', phase: 'Available', size: '200Gi', affinity: host('node-a') }),
        makePV('pv-a-1', { className: 'wait-sc', phase: 'Available', size: '200Gi', affinity: host('node-a') }),
        makePV('pv-b-0', { className: 'wait-sc', phase: 'Available', size: '100Gi', affinity: host('node-b') }),
        makePV('pv-b-1', { className: 'wait-sc', phase: 'Available', size: '100Gi', affinity: host('node-b') }),
      ],
      wantFilter: [null, null, ['UnschedulableAndUnresolvable', BIND_CONFLICT]],
      wantScores: [25, 50, 0],
    },
    {
      name: 'local volumes with close capacity are preferred (multiple pvcs)',
      pod: makePod('pod-a', { claims: ['pvc-0', 'pvc-1'] }),
      nodes: [makeNode('node-a'), makeNode('node-b'), makeNode('node-c')],
      pvcs: [waitClaim('pvc-0', '50Gi'), makePVC('pvc-1', { className: 'wait-hdd-sc', size: '100Gi' })],
      pvs: [
        makePV('pv-a-0', { className: 'wait-sc', phase: 'Available', size: '200Gi', affinity: host('node-a') }),
        makePV('pv-a-1', { className: 'wait-sc', phase: 'Available', size: '200Gi', affinity: host('node-a') }),
        makePV('pv-a-2', { className: 'wait-hdd-sc', phase: 'Available', size: '200Gi', affinity: host('node-a') }),
        makePV('pv-a-3', { className: 'wait-hdd-sc', phase: 'Available', size: '200Gi', affinity: host('node-a') }),
        makePV('pv-b-0', { className: 'wait-sc', phase: 'Available', size: '100Gi', affinity: host('node-b') }),
        makePV('pv-b-1', { className: 'wait-sc', phase: 'Available', size: '100Gi', affinity: host('node-b') }),
        makePV('pv-b-2', { className: 'wait-hdd-sc', phase: 'Available', size: '100Gi', affinity: host('node-b') }),
        makePV('pv-b-3', { className: 'wait-hdd-sc', phase: 'Available', size: '100Gi', affinity: host('node-b') }),
      ],
      wantFilter: [null, null, ['UnschedulableAndUnresolvable', BIND_CONFLICT]],
      wantScores: [38, 75, 0],
    },
    {
      name: 'zonal volumes with close capacity are preferred',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: zonalNodes,
      pvcs: [waitClaim('pvc-a', '50Gi')],
      pvs: zonalPVs,
      wantFilter: [
        null,
        null,
        null,
        null,
        ['UnschedulableAndUnresolvable', BIND_CONFLICT],
        ['UnschedulableAndUnresolvable', BIND_CONFLICT],
      ],
      wantScores: [25, 25, 50, 50, 0, 0],
    },
    {
      name: 'zonal volumes with close capacity are preferred (custom shape)',
      pod: makePod('pod-a', { claims: ['pvc-a'] }),
      nodes: zonalNodes,
      pvcs: [waitClaim('pvc-a', '50Gi')],
      pvs: zonalPVs,
      shape: [
        { utilization: 0, score: 0 },
        { utilization: 50, score: 3 },
        { utilization: 100, score: 5 },
      ],
      wantFilter: [
        null,
        null,
        null,
        null,
        ['UnschedulableAndUnresolvable', BIND_CONFLICT],
        ['UnschedulableAndUnresolvable', BIND_CONFLICT],
      ],
      wantScores: [15, 15, 30, 30, 0, 0],
    },
  ];

  for (const item of table) {
    it(item.name, () => {
      const { plugin } = setup([...item.nodes, ...(item.pvcs ?? []), ...(item.pvs ?? [])], item.shape);
      const state = new CycleState();
      const pre = plugin.preFilter(state, item.pod);
      assert.deepEqual([pre.code, ...pre.reasons], item.wantPreFilter ?? ['Success']);
      if (pre.code !== 'Success') return;
      item.nodes.forEach((node, i) => {
        const s = plugin.filter(state, item.pod, nodeInfo(node));
        assert.deepEqual(
          s.code === 'Success' ? null : [s.code, ...s.reasons],
          item.wantFilter?.[i] ?? null,
          node.metadata.name,
        );
      });
      if (!item.wantScores) return;
      item.nodes.forEach((node, i) => {
        assert.equal(
          plugin.score(state, item.pod, nodeInfo(node)),
          item.wantScores![i],
          `score of ${node.metadata.name}`,
        );
      });
    });
  }

  it('a ghost node (deleted while pods remain) cannot host claims, without failing the request', () => {
    const { plugin } = setup([makePVC('pvc-a', { className: 'wait-sc' })]);
    const pod = makePod('pod-a', { claims: ['pvc-a'] });
    const state = new CycleState();
    plugin.preFilter(state, pod);
    const ghost = { ...nodeInfo(makeNode('gone')), node: undefined };
    assert.deepEqual(view(plugin.filter(state, pod, ghost)), ['UnschedulableAndUnresolvable', 'node(s) were unknown']);
  });

  it('prioritize without a filter in the same cycle scores from the cached (or recomputed) decision', () => {
    const nodes = [makeNode('node-a'), makeNode('node-b')];
    const { plugin } = setup([
      ...nodes,
      waitClaim('pvc-a', '50Gi'),
      makePV('pv-a', { className: 'wait-sc', phase: 'Available', size: '200Gi', affinity: host('node-a') }),
      makePV('pv-b', { className: 'wait-sc', phase: 'Available', size: '100Gi', affinity: host('node-b') }),
    ]);
    const pod = makePod('pod-a', { claims: ['pvc-a'] });
    const state = new CycleState();
    assert.equal(plugin.preFilter(state, pod).code, 'Success');
    assert.deepEqual(
      nodes.map((n) => plugin.score(state, pod, nodeInfo(n))),
      [25, 50],
    );
  });
});

describe('reserve, preBind and unreserve', () => {
  const nodeA = makeNode('node-a');
  const nodeB = makeNode('node-b');
  const localPV = (name: string, node: string) =>
    makePV(name, {
      className: 'wait-sc',
      phase: 'Available',
      size: '10Gi',
      affinity: { 'kubernetes.io/hostname': [node] },
    });

  /** Two pods, each with its own 1Gi claim, competing for the given PVs on node-a. */
  function racing(pvs: PersistentVolume[]) {
    const p1 = makePod('pod-1', { claims: ['claim-1'] });
    const p2 = makePod('pod-2', { claims: ['claim-2'] });
    return { ...setup([nodeA, ...pvs, waitClaim('claim-1'), waitClaim('claim-2'), p1, p2]), p1, p2 };
  }

  /** Both pods filtered on node-a before either reserves, as two scheduling cycles in a row would. */
  const filterBoth = (plugin: VolumeBindingPlugin, ...pods: Pod[]) =>
    pods.map((pod) => {
      const st = new CycleState();
      plugin.preFilter(st, pod);
      return plugin.filter(st, pod, nodeInfo(nodeA));
    });

  /** Completes bindings the way the PV controller does: claim gets volumeName + bind-completed. */
  function pvController(cluster: TestCluster): () => void {
    return cluster.store.on('PersistentVolume', (e) => {
      if (e.type === 'delete') return;
      const ref = e.obj.spec.claimRef;
      if (!ref?.name) return;
      const pvc = cluster.store.get('PersistentVolumeClaim', `${ref.namespace}/${ref.name}`);
      if (!pvc || pvc.spec.volumeName) return;
      queueMicrotask(() =>
        cluster.add({
          ...pvc,
          spec: { ...pvc.spec, volumeName: e.obj.metadata.name },
          metadata: {
            ...pvc.metadata,
            annotations: { ...pvc.metadata.annotations, 'pv.kubernetes.io/bind-completed': 'yes' },
          },
        }),
      );
    });
  }

  function bindCycle(plugin: VolumeBindingPlugin, pod: Pod, nodeName: string) {
    const state = new CycleState();
    plugin.preFilter(state, pod);
    return { state, reserve: plugin.reserve(state, pod, nodeName) };
  }

  it('filter → reserve → preBind binds the chosen PV and leaves no assumption behind', async () => {
    const pod = makePod('pod-1', { claims: ['claim-1'] });
    const { cluster, plugin } = setup([nodeA, localPV('pv-1', 'node-a'), waitClaim('claim-1'), pod]);
    pvController(cluster);
    const filterState = new CycleState();
    plugin.preFilter(filterState, pod);
    assert.equal(plugin.filter(filterState, pod, nodeInfo(nodeA)).code, 'Success');
    const { state, reserve } = bindCycle(plugin, pod, 'node-a');
    assert.equal(reserve.code, 'Success');
    assert.equal(plugin.binder.pvCache.get('pv-1')?.spec.claimRef?.name, 'claim-1');
    const s = await plugin.preBind(state, pod, 'node-a', new AbortController().signal);
    assert.deepEqual([s.code, ...s.reasons], ['Success']);
    assert.equal(cluster.store.get('PersistentVolumeClaim', 'default/claim-1')?.spec.volumeName, 'pv-1');
    assert.equal(plugin.binder.pvCache.isAssumed('pv-1'), false);
    assert.deepEqual(plugin.reservedPods(), []);
  });

  it('never double-book: the second of two pods racing for one PV fails its reserve cleanly', () => {
    const { plugin, p1, p2 } = racing([localPV('pv-1', 'node-a')]);
    // Both filtered before either reserved: both decisions chose pv-1.
    for (const filtered of filterBoth(plugin, p1, p2)) assert.equal(filtered.code, 'Success');
    assert.equal(bindCycle(plugin, p1, 'node-a').reserve.code, 'Success');
    const second = bindCycle(plugin, p2, 'node-a');
    assert.deepEqual([second.reserve.code, ...second.reserve.reasons], ['UnschedulableAndUnresolvable', BIND_CONFLICT]);
    assert.equal(plugin.binder.pvCache.get('pv-1')?.spec.claimRef?.name, 'claim-1');
  });

  it('a stale cached decision is never used: the assumption changed the generation', () => {
    const { plugin, p1, p2 } = racing([localPV('pv-1', 'node-a'), localPV('pv-2', 'node-a')]);
    filterBoth(plugin, p1, p2);
    const first = bindCycle(plugin, p1, 'node-a');
    const second = bindCycle(plugin, p2, 'node-a');
    assert.equal(first.reserve.code, 'Success');
    assert.equal(second.reserve.code, 'Success');
    const chosen = ['pv-1', 'pv-2'].map((n) => plugin.binder.pvCache.get(n)?.spec.claimRef?.name).sort();
    assert.deepEqual(chosen, ['claim-1', 'claim-2']);
  });

  it('a reserve for a pod UID already reserved on the same node shares the assumption; unreserve reverts once all let go', () => {
    const pod = makePod('pod-1', { claims: ['claim-1'] });
    const { plugin } = setup([nodeA, localPV('pv-1', 'node-a'), waitClaim('claim-1'), pod]);
    const a = bindCycle(plugin, pod, 'node-a');
    const b = bindCycle(plugin, pod, 'node-a');
    assert.equal(a.reserve.code, 'Success');
    assert.equal(b.reserve.code, 'Success');
    const c = bindCycle(plugin, pod, 'node-b');
    assert.equal(c.reserve.code, 'Error');
    plugin.unreserve(a.state, pod, 'node-a');
    assert.equal(plugin.binder.pvCache.isAssumed('pv-1'), true);
    plugin.unreserve(b.state, pod, 'node-a');
    plugin.unreserve(b.state, pod, 'node-a'); // idempotent
    assert.equal(plugin.binder.pvCache.isAssumed('pv-1'), false);
    assert.deepEqual(plugin.reservedPods(), []);
  });

  it('a failed bind reverts every assumption on unreserve', async () => {
    const pod = makePod('pod-1', { claims: ['claim-1', 'claim-2'] });
    const { cluster, plugin } = setup([
      nodeA,
      localPV('pv-1', 'node-a'),
      localPV('pv-2', 'node-a'),
      waitClaim('claim-1'),
      waitClaim('claim-2', '2Gi'),
      pod,
    ]);
    const { state, reserve } = bindCycle(plugin, pod, 'node-a');
    assert.equal(reserve.code, 'Success');
    cluster.writer.failUpdates.add('pv-2');
    const s = await plugin.preBind(state, pod, 'node-a', new AbortController().signal);
    assert.equal(s.code, 'Error');
    assert.match(s.reasons[0], /injected failure/);
    plugin.unreserve(state, pod, 'node-a');
    for (const name of ['pv-1', 'pv-2']) assert.equal(plugin.binder.pvCache.isAssumed(name), false, name);
  });

  it('preBind honours the abort signal', async () => {
    // A claim to provision: its bind waits for the provisioner's PV (a static binding waits for nothing).
    const pod = makePod('pod-1', { claims: ['claim-1'] });
    const provisioned = makeStorageClass('csi-sc', { provisioner: 'csi.example.com' });
    const { plugin } = setup([provisioned, nodeA, makePVC('claim-1', { className: 'csi-sc', size: '1Gi' }), pod]);
    const { state } = bindCycle(plugin, pod, 'node-a');
    const ac = new AbortController();
    const pending = plugin.preBind(state, pod, 'node-a', ac.signal);
    setTimeout(() => ac.abort(), 10);
    const s = await pending;
    assert.deepEqual([s.code, ...s.reasons], ['Error', 'binding volumes: context canceled']);
    plugin.unreserve(state, pod, 'node-a');
    assert.equal(plugin.binder.pvcCache.isAssumed('default/claim-1'), false);
  });

  it('a reservation whose bind never came back expires after the bind timeout', () => {
    let now = 0;
    const pod = makePod('pod-1', { claims: ['claim-1'] });
    const cluster = new TestCluster([immediateSC, waitSC, nodeA, localPV('pv-1', 'node-a'), waitClaim('claim-1'), pod]);
    const plugin = new VolumeBindingPlugin(cluster.binder(5), undefined, () => now);
    assert.equal(bindCycle(plugin, pod, 'node-a').reserve.code, 'Success');
    now = 60_000;
    assert.deepEqual(plugin.expireStaleReservations(), []);
    assert.equal(plugin.binder.pvCache.isAssumed('pv-1'), true);
    now = 66_000;
    assert.deepEqual(plugin.expireStaleReservations(), ['uid-pod-1']);
    assert.equal(plugin.binder.pvCache.isAssumed('pv-1'), false);
  });

  /**
   * A pod whose only claim is bound to pv-1 on `node` (bound back to it), reserved on node-a. `uid`: the PV's claimRef
   * names the claim's UID, as once the PV controller has bound it (without: the watch does not show it settled).
   */
  const boundPVOn = (node: string, uid = true) =>
    makePV('pv-1', {
      className: 'wait-sc',
      phase: 'Bound',
      affinity: { 'kubernetes.io/hostname': [node] },
      spec: { claimRef: { namespace: 'default', name: 'claim-1', ...(uid ? { uid: 'uid-claim-1' } : {}) } },
    });
  function boundCycle(node: string, uid = true) {
    const pod = makePod('pod-1', { claims: ['claim-1'] });
    const boundPV = boundPVOn(node, uid);
    const claim = makePVC('claim-1', { className: 'wait-sc', volumeName: 'pv-1', bindCompleted: true });
    const { cluster, plugin } = setup([nodeA, boundPV, claim, pod]);
    const { state, reserve } = bindCycle(plugin, pod, 'node-a');
    assert.equal(reserve.code, 'Success');
    return { cluster, plugin, pod, state };
  }

  it('all claims bound, and settled in the watch: reserve and preBind have nothing to do, nothing is read', async () => {
    const { cluster, plugin, pod, state } = boundCycle('node-a');
    const s = await plugin.preBind(state, pod, 'node-a', new AbortController().signal);
    assert.equal(s.code, 'Success');
    assert.deepEqual(cluster.writer.updates, []);
    assert.deepEqual(cluster.writer.reads, [], 'a settled binding cannot change: upstream reads nothing either');
  });

  it('all claims bound, a PV not yet bound back by UID in the watch: read back from the API before the Binding', async () => {
    const { cluster, plugin, pod, state } = boundCycle('node-a', false);
    const s = await plugin.preBind(state, pod, 'node-a', new AbortController().signal);
    assert.equal(s.code, 'Success');
    assert.deepEqual(cluster.writer.updates, []);
    assert.deepEqual(cluster.writer.reads, ['default/claim-1', 'pv-1']);
  });

  it('all claims bound but not settled in the watch, to a PV the node does not satisfy: preBind fails before the Binding', async () => {
    const { cluster, plugin, pod, state } = boundCycle('node-a', false);
    // Another writer's choice reached the API after our decision; the watch has not told us yet.
    const elsewhere = boundPVOn('node-b', false);
    cluster.writer.getPersistentVolume = async () => elsewhere;
    const s = await plugin.preBind(state, pod, 'node-a', new AbortController().signal);
    assert.equal(s.code, 'Error');
    assert.match(s.reasons.join(), /pv "pv-1" node affinity doesn't match node "node-a"/);
  });

  it('reserve on a node the claims cannot use reports the reasons', () => {
    const pod = makePod('pod-1', { claims: ['claim-1'] });
    const { plugin } = setup([nodeA, nodeB, localPV('pv-1', 'node-a'), waitClaim('claim-1'), pod]);
    const { reserve } = bindCycle(plugin, pod, 'node-b');
    assert.deepEqual([reserve.code, ...reserve.reasons], ['UnschedulableAndUnresolvable', BIND_CONFLICT]);
  });
});

describe('decisions kept from filter for the requests that follow', () => {
  const nodeA = makeNode('node-a');
  const host = (n: string) => ({ 'kubernetes.io/hostname': [n] });
  const pvOn = (name: string, size: string) =>
    makePV(name, { className: 'wait-sc', phase: 'Available', size, affinity: host('node-a') });
  const objects = () => [
    nodeA,
    pvOn('pv-small', '10Gi'),
    pvOn('pv-big', '100Gi'),
    waitClaim('claim-0'),
    waitClaim('claim-1'),
  ];
  const pod = makePod('pod-1', { claims: ['claim-1'] });
  const nominated = makePod('pod-0', { claims: ['claim-0'] });
  const reserveOnA = (plugin: VolumeBindingPlugin) => {
    const state = new CycleState();
    plugin.preFilter(state, pod);
    return plugin.reserve(state, pod, 'node-a');
  };
  const claimOf = (plugin: VolumeBindingPlugin, pv: string) => plugin.binder.pvCache.get(pv)?.spec.claimRef?.name;

  it('without storage scoring or nominated pods filter keeps nothing, and bind finds the same volume again', () => {
    const cluster = new TestCluster([waitSC, ...objects(), pod]);
    const plugin = new VolumeBindingPlugin(cluster.binder(5));
    const state = new CycleState();
    plugin.preFilter(state, pod);
    assert.equal(plugin.filter(state, pod, nodeInfo(nodeA)).code, 'Success');
    assert.equal(plugin.decisions.podCount, 0);
    assert.equal(reserveOnA(plugin).code, 'Success');
    assert.equal(claimOf(plugin, 'pv-small'), 'claim-1');
  });

  it('with storage scoring filter keeps the score of each node, not its volumes, and bind finds them again', () => {
    const cluster = new TestCluster([waitSC, ...objects(), pod]);
    const plugin = new VolumeBindingPlugin(cluster.binder(5), buildCapacityScorer(VOLUME_CAPACITY_PRIORITY));
    const state = new CycleState();
    plugin.preFilter(state, pod);
    plugin.filter(state, pod, nodeInfo(nodeA));
    const kept = plugin.decisions.decision(pod.metadata.uid, 'node-a', plugin.binder.generation());
    // The score a plugin with nothing cached computes from the volumes it finds.
    const fresh = new VolumeBindingPlugin(cluster.binder(5), buildCapacityScorer(VOLUME_CAPACITY_PRIORITY));
    assert.deepEqual(kept, { podVolumes: undefined, score: fresh.score(new CycleState(), pod, nodeInfo(nodeA)) });
    assert.ok((kept?.score ?? 0) > 0);
    assert.equal(reserveOnA(plugin).code, 'Success');
    assert.equal(claimOf(plugin, 'pv-small'), 'claim-1');
  });

  it("preemption's what-ifs (a pod removed from the node) leave no decision for prioritize and bind", () => {
    const cluster = new TestCluster([waitSC, ...objects(), nominated, pod]);
    const plugin = new VolumeBindingPlugin(cluster.binder(5), buildCapacityScorer(VOLUME_CAPACITY_PRIORITY));
    const state = new CycleState();
    plugin.preFilter(state, pod);
    const whatIf = state.clone();
    plugin.removePod(whatIf, pod, nominated, nodeInfo(nodeA));
    assert.equal(plugin.filter(whatIf, pod, nodeInfo(nodeA)).code, 'Success');
    assert.equal(plugin.decisions.forPod(pod.metadata.uid, plugin.binder.generation()), undefined);
    // The cycle's own state is untouched: its filter remembers as ever.
    plugin.filter(state, pod, nodeInfo(nodeA));
    assert.ok(plugin.decisions.decision(pod.metadata.uid, 'node-a', plugin.binder.generation()));
  });

  it("a choice that avoided a nominated pod's volume is kept, and bind takes it, without storage scoring", () => {
    const cluster = new TestCluster([waitSC, ...objects(), nominated, pod]);
    const plugin = new VolumeBindingPlugin(cluster.binder(5));
    const state = new CycleState();
    plugin.preFilter(state, pod);
    // The nominated pod would take pv-small on node-a: the pod is offered pv-big there.
    plugin.addPod(state, pod, nominated, nodeInfo(nodeA));
    assert.equal(plugin.filter(state, pod, nodeInfo(nodeA)).code, 'Success');
    assert.equal(reserveOnA(plugin).code, 'Success');
    assert.equal(claimOf(plugin, 'pv-big'), 'claim-1');
    assert.equal(claimOf(plugin, 'pv-small'), undefined);
  });
});
