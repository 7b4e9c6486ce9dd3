// NodeVolumeLimits (upstream nodevolumelimits): the CSI table with case names after the upstream tests, then a
// property: NodeVolumeLimits (claims from the NodeInfo aggregate, a walk of the few pods it cannot stand in for,
// per-node memos) answers exactly as upstream's CSILimits walk over every pod of the node, written out plainly below
// as the oracle; also after the store and the node's pods change under the same plugin (memo invalidation).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import { ephemeralClaimName } from '../../src/cache/pod-usage.ts';
import type { ClusterStore } from '../../src/cluster/store.ts';
import type {
  AnyObject,
  CSINode,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Volume,
} from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import type { Status } from '../../src/framework/interfaces.ts';
import { NodeVolumeLimitsPlugin } from '../../src/plugins/node-volume-limits.ts';
import { ephemeralOwnershipError } from '../../src/volumes/claims.ts';
import {
  csiDriverForInTreePlugin,
  inlineVolumeAsCSI,
  inTreePluginOfPV,
  isMigratableProvisioner,
  isMigratedOnNode,
  translateInTreePVToCSI,
} from '../../src/volumes/csi-migration.ts';
import { claimClass } from '../../src/volumes/pv-matching.ts';
import { makeCSINode, makeNode, makePod, makePV, makePVC, makeStorageClass } from '../helpers/objects.ts';
import { TestCluster } from '../volumes/fixtures.ts';
import * as neighbour from './helpers.ts';
import { nodeInfo as plainNodeInfo } from './helpers.ts';

describe('NodeVolumeLimits (CSI)', () => {
  const { claimVolume, nodeInfo, view } = neighbour;
  const csiNode = (count: number | undefined, migrated = ''): CSINode =>
    makeCSINode('n1', {
      annotations: { 'storage.alpha.kubernetes.io/migrated-plugins': migrated },
      drivers: [{ name: 'ebs.csi.aws.com', nodeID: 'n1', ...(count === undefined ? {} : { allocatable: { count } }) }],
    });
  const csiPV = (name: string) =>
    makePV(name, { spec: { csi: { driver: 'ebs.csi.aws.com', volumeHandle: `h-${name}` } } });
  const boundClaim = (name: string, pvName: string) => makePVC(name, { spec: { volumeName: pvName } });
  const sc = makeStorageClass('ebs', { provisioner: 'ebs.csi.aws.com' });
  const objects = [
    csiPV('pv-1'),
    csiPV('pv-2'),
    csiPV('pv-3'),
    boundClaim('c1', 'pv-1'),
    boundClaim('c2', 'pv-2'),
    boundClaim('c3', 'pv-3'),
    makePVC('unbound', { spec: { storageClassName: 'ebs' } }),
    sc,
    makePV('intree', { spec: { awsElasticBlockStore: { volumeID: 'aws://us-east-1a/vol-123' } } }),
    boundClaim('intree-claim', 'intree'),
  ];
  function run(extra: (CSINode | Pod)[], incoming: Pod, nodePods: Pod[]): Status {
    const cluster = new TestCluster([...objects, ...extra]);
    const plugin = new NodeVolumeLimitsPlugin(cluster.store);
    const state = new CycleState();
    const pre = plugin.preFilter(state, incoming);
    if (pre.code !== 'Success') return pre;
    return plugin.filter(state, incoming, nodeInfo(makeNode('n1'), nodePods));
  }
  const exceeded = ['Unschedulable', 'node(s) exceed max volume count'];

  it('pod without claims: Skip', () =>
    assert.equal(run([], makePod('p', { volumes: [{ name: 'e', emptyDir: {} }] }), []).code, 'Skip'));
  it('fits when attached + new ≤ allocatable.count', () => {
    assert.deepEqual(
      view(
        run([csiNode(2)], makePod('p', { volumes: [claimVolume('c2')] }), [
          makePod('e', { volumes: [claimVolume('c1')], nodeName: 'n1' }),
        ]),
      ),
      ['Success'],
    );
  });
  it('exceeds max volume count', () => {
    assert.deepEqual(
      view(
        run([csiNode(1)], makePod('p', { volumes: [claimVolume('c2')] }), [
          makePod('e', { volumes: [claimVolume('c1')], nodeName: 'n1' }),
        ]),
      ),
      exceeded,
    );
  });
  it('a volume already attached for another pod is not counted twice', () => {
    assert.deepEqual(
      view(
        run([csiNode(1)], makePod('p', { volumes: [claimVolume('c1')] }), [
          makePod('e', { volumes: [claimVolume('c1')], nodeName: 'n1' }),
        ]),
      ),
      ['Success'],
    );
  });
  it('unbound claims count by their class provisioner', () => {
    assert.deepEqual(
      view(
        run([csiNode(1)], makePod('p', { volumes: [claimVolume('unbound')] }), [
          makePod('e', { volumes: [claimVolume('c1')], nodeName: 'n1' }),
        ]),
      ),
      exceeded,
    );
  });
  it('no limit published: fits', () => {
    assert.deepEqual(
      view(
        run([csiNode(undefined)], makePod('p', { volumes: [claimVolume('c2')] }), [
          makePod('e', { volumes: [claimVolume('c1')], nodeName: 'n1' }),
        ]),
      ),
      ['Success'],
    );
  });
  it('in-tree PV counts against its CSI driver only where the plugin is migrated', () => {
    const existing = [makePod('e', { volumes: [claimVolume('c1')], nodeName: 'n1' })];
    assert.deepEqual(view(run([csiNode(1)], makePod('p', { volumes: [claimVolume('intree-claim')] }), existing)), [
      'Success',
    ]);
    assert.deepEqual(
      view(
        run([csiNode(1, 'kubernetes.io/aws-ebs')], makePod('p', { volumes: [claimVolume('intree-claim')] }), existing),
      ),
      exceeded,
    );
  });
  it('missing claim of the new pod is unresolvable', () => {
    assert.deepEqual(view(run([csiNode(1)], makePod('p', { volumes: [claimVolume('nope')] }), [])), [
      'UnschedulableAndUnresolvable',
      'looking up PVC default/nope: persistentvolumeclaim "nope" not found',
    ]);
  });
});

// ------------------------------------------------------------------------------------------------ the oracle
class NotFound extends Error {}

function oracle(store: ClusterStore, pod: Pod, info: { name: string; pods: Iterable<Pod> }): Status {
  const volumes = pod.spec.volumes ?? [];
  if (volumes.length === 0) return { code: 'Success', reasons: [] };
  const csiNode = store.get('CSINode', info.name);
  const driverInfo = (pvc: PersistentVolumeClaim): [string, string] | undefined => {
    const pv = pvc.spec.volumeName ? store.get('PersistentVolume', pvc.spec.volumeName) : undefined;
    if (pv) {
      let csi = pv.spec.csi;
      if (!csi) {
        const plugin = inTreePluginOfPV(pv);
        if (!plugin || !isMigratedOnNode(plugin, csiNode)) return undefined;
        csi = translateInTreePVToCSI(pv)?.spec.csi;
        if (!csi) return undefined;
      }
      return csi.driver && csi.volumeHandle ? [csi.driver, csi.volumeHandle] : undefined;
    }
    const scName = claimClass(pvc);
    if (scName === '') return undefined;
    const sc = store.get('StorageClass', scName);
    if (!sc) return undefined;
    let driver: string | undefined = sc.provisioner;
    if (isMigratableProvisioner(driver)) {
      if (!isMigratedOnNode(driver, csiNode)) return undefined;
      driver = csiDriverForInTreePlugin(driver);
      if (!driver) return undefined;
    }
    return [driver, `oracle-${pvc.metadata.namespace}/${pvc.metadata.name}`];
  };
  const attachable = (p: Pod, isNew: boolean, out: Map<string, string>) => {
    const ns = p.metadata.namespace ?? 'default';
    for (const v of p.spec.volumes ?? []) {
      let name: string;
      let ephemeral = false;
      if (v.persistentVolumeClaim) name = v.persistentVolumeClaim.claimName;
      else if (v.ephemeral) {
        name = ephemeralClaimName(p, v.name);
        ephemeral = true;
      } else {
        const inline = inlineVolumeAsCSI(v, csiNode);
        if (inline) out.set(`${inline.driver}/${inline.handle}`, inline.driver);
        continue;
      }
      if (name === '') throw new Error('PersistentVolumeClaim had no name');
      const pvc = store.get('PersistentVolumeClaim', `${ns}/${name}`);
      if (!pvc) {
        if (isNew) throw new NotFound(`looking up PVC ${ns}/${name}: persistentvolumeclaim "${name}" not found`);
        continue;
      }
      if (ephemeral) {
        const err = ephemeralOwnershipError(p, pvc);
        if (err) throw new Error(err);
      }
      const d = driverInfo(pvc);
      if (d) out.set(`${d[0]}/${d[1]}`, d[0]);
    }
  };
  const newVolumes = new Map<string, string>();
  try {
    attachable(pod, true, newVolumes);
  } catch (err) {
    return {
      code: err instanceof NotFound ? 'UnschedulableAndUnresolvable' : 'Error',
      reasons: [(err as Error).message],
    };
  }
  if (newVolumes.size === 0) return { code: 'Success', reasons: [] };
  const limits = new Map<string, number>();
  for (const d of csiNode?.spec.drivers ?? []) {
    if (d.allocatable?.count !== undefined && d.allocatable.count !== null) limits.set(d.name, d.allocatable.count);
  }
  if (limits.size === 0) return { code: 'Success', reasons: [] };
  const attached = new Map<string, string>();
  for (const existing of info.pods) {
    try {
      attachable(existing, false, attached);
    } catch (err) {
      return { code: 'Error', reasons: [(err as Error).message] };
    }
  }
  const attachedCount = new Map<string, number>();
  for (const [unique, driver] of attached) {
    newVolumes.delete(unique);
    attachedCount.set(driver, (attachedCount.get(driver) ?? 0) + 1);
  }
  const newCount = new Map<string, number>();
  for (const driver of newVolumes.values()) newCount.set(driver, (newCount.get(driver) ?? 0) + 1);
  for (const [driver, count] of newCount) {
    const limit = limits.get(driver);
    if (limit !== undefined && (attachedCount.get(driver) ?? 0) + count > limit) {
      return { code: 'Unschedulable', reasons: ['node(s) exceed max volume count'] };
    }
  }
  return { code: 'Success', reasons: [] };
}

// ---------------------------------------------------------------------------------------------- the cluster
const node = makeNode('n1');
const classes = [
  ['sc-d1', 'd1.csi'],
  ['sc-d2', 'd2.csi'],
  ['sc-ebs', 'kubernetes.io/aws-ebs'],
  ['local', 'kubernetes.io/no-provisioner'],
].map(([name, provisioner]) => makeStorageClass(name, { provisioner }));
const CLAIMS = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5'];
const PVS = ['pv-d1-a', 'pv-d1-b', 'pv-d2-a', 'pv-ebs', 'pv-local'];

function pv(name: string): PersistentVolume {
  const spec: PersistentVolume['spec'] = name.startsWith('pv-d1')
    ? { csi: { driver: 'd1.csi', volumeHandle: `h-${name}` } }
    : name.startsWith('pv-d2')
      ? { csi: { driver: 'd2.csi', volumeHandle: `h-${name}` } }
      : name === 'pv-ebs'
        ? { awsElasticBlockStore: { volumeID: 'aws://us-east-1a/vol-1' } }
        : { local: { path: '/mnt' } };
  return makePV(name, { spec });
}

const claimArb = fc.record({
  exists: fc.boolean(),
  volumeName: fc.option(fc.constantFrom(...PVS, 'pv-missing'), { nil: undefined }),
  className: fc.constantFrom('sc-d1', 'sc-d2', 'sc-ebs', 'local', '', 'sc-missing'),
  // for ephemeral claims: the pod that controls it (by index into the pods, -1 for the new pod)
  owner: fc.integer({ min: -1, max: 3 }),
});
const volumeArb: fc.Arbitrary<Volume> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(...CLAIMS).map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
  },
  { weight: 1, arbitrary: fc.constant({ name: 'nameless', persistentVolumeClaim: { claimName: '' } }) },
  { weight: 2, arbitrary: fc.constant({ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } }) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('vol-2', 'vol-3')
      .map((id) => ({ name: 'ebs', awsElasticBlockStore: { volumeID: `aws://us-east-1a/${id}` } })),
  },
  { weight: 1, arbitrary: fc.constant({ name: 'tmp', emptyDir: {} }) },
);
const podArb = fc.uniqueArray(volumeArb, { maxLength: 3, selector: (v) => v.name });
const csiNodeArb = fc.record({
  d1: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
  d2: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
  ebs: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
  migrated: fc.boolean(),
  present: fc.boolean(),
});
type CSINodeSpec = typeof csiNodeArb extends fc.Arbitrary<infer T> ? T : never;

function csiNode(s: CSINodeSpec): CSINode {
  const driver = (name: string, count: number | undefined) => ({
    name,
    nodeID: 'n1',
    ...(count === undefined ? {} : { allocatable: { count } }),
  });
  return makeCSINode('n1', {
    annotations: { 'storage.alpha.kubernetes.io/migrated-plugins': s.migrated ? 'kubernetes.io/aws-ebs' : '' },
    drivers: [driver('d1.csi', s.d1), driver('d2.csi', s.d2), driver('ebs.csi.aws.com', s.ebs)],
  });
}

const mkPod = (name: string, volumes: Volume[], onNode: boolean): Pod =>
  makePod(name, { volumes, ...(onNode ? { nodeName: 'n1' } : {}) });

type ClaimSpec = typeof claimArb extends fc.Arbitrary<infer T> ? T : never;

function claimObjects(claims: ClaimSpec[], pods: Pod[], newPod: Pod): AnyObject[] {
  const out: AnyObject[] = [];
  const all = [newPod, ...pods];
  for (const [i, c] of claims.entries()) {
    if (!c.exists) continue;
    out.push(makePVC(CLAIMS[i], { uid: `claim-${i}`, volumeName: c.volumeName, className: c.className }));
  }
  // The ephemeral claims `<pod>-scratch`, controlled by the pod the first claim spec names (or by none).
  for (const [i, p] of all.entries()) {
    const c = claims[i % claims.length];
    if (!c?.exists) continue;
    const owner = c.owner < 0 ? newPod : pods[c.owner];
    out.push(
      makePVC(`${p.metadata.name}-scratch`, {
        uid: `eph-${i}`,
        className: c.className,
        ...(owner
          ? {
              ownerReferences: [
                { apiVersion: 'v1', kind: 'Pod', name: owner.metadata.name, uid: owner.metadata.uid, controller: true },
              ],
            }
          : {}),
      }),
    );
  }
  return out;
}

const view = (s: Status) => [s.code, ...s.reasons].join(' | ').replace(/unbound-[a-z0-9]+-|oracle-/g, 'H-');

it('NodeVolumeLimits decides as upstream’s walk over every pod of the node, memos included', () => {
  fc.assert(
    fc.property(
      fc.array(claimArb, { minLength: CLAIMS.length, maxLength: CLAIMS.length }),
      fc.array(podArb, { maxLength: 4 }),
      podArb,
      csiNodeArb,
      fc.boolean(),
      fc.record({ claim: fc.nat(), volumeName: fc.constantFrom(...PVS), extra: podArb, dropFirst: fc.boolean() }),
      (claims, existingVolumes, newVolumes, csi, newPodOnNode, change) => {
        const pods = existingVolumes.map((v, i) => mkPod(`e${i}`, v, true));
        const pod = mkPod('p', newVolumes, false);
        const objects: AnyObject[] = [...classes, ...PVS.map(pv), ...claimObjects(claims, pods, pod)];
        if (csi.present) objects.push(csiNode(csi));
        const cluster = new TestCluster(objects);
        const plugin = new NodeVolumeLimitsPlugin(cluster.store);
        const onNode = newPodOnNode ? [...pods, { ...pod, spec: { ...pod.spec, nodeName: 'n1' } }] : pods;
        const cached = newNodeInfo(node, onNode);
        cached.ordinal = 7; // as the cache numbers its NodeInfos: the plugin finds the CSINode record by it
        const check = (label: string) => {
          const want = view(
            oracle(cluster.store, pod, { name: 'n1', pods: [...cached.pods.values()].map((p) => p.pod) }),
          );
          const state = new CycleState();
          plugin.preFilter(state, pod);
          assert.equal(view(plugin.filter(state, pod, cached)), want, `${label} (cache NodeInfo)`);
          // again: from the memos
          assert.equal(view(plugin.filter(new CycleState(), pod, cached)), want, `${label} (memoised)`);
          const plain = plainNodeInfo(
            node,
            [...cached.pods.values()].map((p) => p.pod),
          );
          assert.equal(view(plugin.filter(new CycleState(), pod, plain)), want, `${label} (plain NodeInfo)`);
        };
        check('initial');
        // A claim gets bound (or rebound) under the same plugin: a PVC event invalidates the attached volumes.
        // Preferably one the node's pods mount, so the attached volumes change.
        const mounted = CLAIMS.filter((c) => cached.pvcRefCounts.has(`default/${c}`));
        const i = CLAIMS.indexOf(
          mounted.length > 0 ? mounted[change.claim % mounted.length] : CLAIMS[change.claim % CLAIMS.length],
        );
        const existing = cluster.store.get('PersistentVolumeClaim', `default/${CLAIMS[i]}`);
        if (existing) {
          cluster.add({ ...existing, spec: { ...existing.spec, volumeName: change.volumeName } });
          check('after a claim changed');
        }
        // The node's pods change: its generation moves.
        cached.addPod(mkPod('late', change.extra, true));
        check('after a pod arrived');
        if (change.dropFirst && pods.length > 0) {
          cached.removePod(pods[0].metadata.uid);
          check('after a pod left');
        }
        // The CSINode is replaced (limits or migration change).
        if (csi.present) {
          cluster.add(csiNode({ ...csi, d1: (csi.d1 ?? 0) + 1, migrated: !csi.migrated }));
          check('after the CSINode changed');
        } else {
          cluster.add(csiNode({ ...csi, present: true }));
          check('after the CSINode came');
        }
      },
    ),
    { numRuns: 800 },
  );
});
