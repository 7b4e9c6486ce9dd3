// Upstream binder_test.go, table by table: each case keeps its upstream name.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type {
  CSIDriver,
  CSINode,
  CSIStorageCapacity,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
} from '../../src/cluster/types.ts';
import {
  ERR_REASON_BIND_CONFLICT as BIND_CONFLICT,
  type FindResult,
  ERR_REASON_NODE_CONFLICT as NODE_CONFLICT,
  ERR_REASON_NOT_ENOUGH_SPACE as NOT_ENOUGH_SPACE,
  type PodVolumes,
  ERR_REASON_PV_NOT_EXIST as PV_NOT_EXIST,
} from '../../src/volumes/binder.ts';
import { GRACE_MS } from '../../src/volumes/provisioned-halves.ts';
import type { DynamicProvision } from '../../src/volumes/provisioning.ts';
import type { ClusterVolumeBinder } from '../../src/volumes/volume-binder.ts';
import { makeCSIDriver, makeStorageClass } from '../helpers/objects.ts';
import {
  boundMigrationPVC,
  boundPVC,
  boundPVCNode1a,
  conflictingGenericPVC,
  correctGenericPVC,
  csiNode1Migrated,
  csiNode1NotMigrated,
  immediateBoundPVC,
  immediateUnboundPVC,
  makeCapacity,
  makePod,
  makeTestPV,
  makeTestPVC,
  migrationPVBound,
  migrationPVBoundToUnbound,
  NODE_LABEL_VALUE,
  networkAttachedCapacity,
  node1,
  node1Capacity,
  node1NoLabels,
  node1Zone1,
  node1Zone2,
  node2,
  node2Capacity,
  nonmigrationPVBoundToUnbound,
  noProvisionerPVC,
  PROVISIONER,
  PVC_UNBOUND,
  preboundPVC,
  preboundPVCNode1a,
  provisionedPVC,
  provisionedPVC2,
  provisionedPVCBound,
  provisionedPVCHigherVersion,
  provMigrationPVCBound,
  pvBound,
  pvBoundGeneric,
  pvBoundImmediate,
  pvBoundImmediateNode2,
  pvNode1a,
  pvNode1aBound,
  pvNode1b,
  pvNode1bBound,
  pvNode1bBoundHigherVersion,
  pvNode1c,
  pvNode2,
  selectedNodePVC,
  storageClasses,
  TestCluster,
  topoMismatchPVC,
  unboundPVC,
  unboundPVC2,
  WAIT_CLASS,
  WAIT_CLASS_WITH_PROVISIONER,
  withRV,
  withSelectedNode,
} from './fixtures.ts';

const testNode = node1;

/** Upstream's findPodVolumes test helper: classify, refuse unbound immediate claims, then FindPodVolumes. */
function findPodVolumes(binder: ClusterVolumeBinder, pod: Pod, node: Node): FindResult {
  const claims = binder.getPodVolumeClaims(pod);
  if (claims.unboundClaimsImmediate.length > 0) throw new Error('pod has unbound immediate PersistentVolumeClaims');
  return binder.findPodVolumes(pod, claims, node);
}

function env(opts: {
  pvs?: PersistentVolume[];
  pvcs?: PersistentVolumeClaim[];
  nodes?: Node[];
  csiNodes?: CSINode[];
  csiDriver?: CSIDriver;
  capacities?: CSIStorageCapacity[];
  pods?: Pod[];
}): { cluster: TestCluster; binder: ClusterVolumeBinder } {
  const cluster = new TestCluster([
    ...storageClasses(),
    ...(opts.nodes ?? []),
    ...(opts.csiNodes ?? []),
    ...(opts.csiDriver ? [opts.csiDriver] : []),
    ...(opts.capacities ?? []),
    ...(opts.pvs ?? []),
    ...(opts.pvcs ?? []),
    ...(opts.pods ?? []),
  ]);
  return { cluster, binder: cluster.binder() };
}

const names = (bindings: PodVolumes['staticBindings']) =>
  bindings.map((b) => [b.pvc.metadata.name, b.pv.metadata.name]);
const sorted = (reasons: readonly string[]) => [...reasons].sort();

interface FindCase {
  pvs?: PersistentVolume[];
  podPVCs?: PersistentVolumeClaim[];
  cachePVCs?: PersistentVolumeClaim[];
  pod?: Pod;
  expectedBindings?: [string, string][];
  expectedProvisions?: string[];
  reasons?: string[];
  shouldFail?: boolean;
  needsCapacity?: boolean;
}

function runFind(c: FindCase, csiDriver: CSIDriver | undefined): void {
  const { binder } = env({ pvs: c.pvs, pvcs: c.cachePVCs ?? c.podPVCs, csiDriver });
  const pod = c.pod ?? makePod('test-pod', { claims: c.podPVCs ?? [], nodeName: 'node1' });
  let result: FindResult | undefined;
  let error: unknown;
  try {
    result = findPodVolumes(binder, pod, testNode);
  } catch (err) {
    error = err;
  }
  if (c.shouldFail) {
    assert.ok(error, 'returned success but expected error');
    return;
  }
  assert.equal(error, undefined);
  let reasons = c.reasons ?? [];
  let provisions = c.expectedProvisions ?? [];
  if (c.needsCapacity && csiDriver?.spec.storageCapacity) {
    // Without CSIStorageCapacity objects, provisioning is blocked.
    reasons = [...reasons, NOT_ENOUGH_SPACE];
    provisions = [];
  }
  assert.deepEqual(sorted(result!.reasons), sorted(reasons));
  assert.deepEqual(names(result!.podVolumes.staticBindings), c.expectedBindings ?? []);
  assert.deepEqual(
    result!.podVolumes.dynamicProvisions.map((p) => p.pvc.metadata.name),
    provisions,
  );
}

const CSI_DRIVER_VARIANTS: Record<string, CSIDriver | undefined> = {
  'no CSIDriver': undefined,
  'CSIDriver with capacity tracking': makeCSIDriver(PROVISIONER, { storageCapacity: true }),
  'CSIDriver without capacity tracking': makeCSIDriver(PROVISIONER, { storageCapacity: false }),
};

describe('TestFindPodVolumesWithoutProvisioning', () => {
  const scenarios: Record<string, FindCase> = {
    'no-volumes': { pod: makePod('test-pod', { nodeName: 'node1' }) },
    'no-pvcs': {
      pod: {
        ...makePod('test-pod', { nodeName: 'node1' }),
        spec: { containers: [], volumes: [{ name: 'e', emptyDir: {} }] },
      },
    },
    'pvc-not-found': { cachePVCs: [], podPVCs: [boundPVC], shouldFail: true },
    'bound-pvc': { podPVCs: [boundPVC], pvs: [pvBound] },
    'bound-pvc,pv-not-exists': { podPVCs: [boundPVC], reasons: [PV_NOT_EXIST] },
    'prebound-pvc': { podPVCs: [preboundPVC], pvs: [pvNode1aBound], shouldFail: true },
    'unbound-pvc,pv-same-node': {
      podPVCs: [unboundPVC],
      pvs: [pvNode2, pvNode1a, pvNode1b],
      expectedBindings: [['unbound-pvc', 'pv-node1a']],
    },
    'unbound-pvc,pv-different-node': { podPVCs: [unboundPVC], pvs: [pvNode2], reasons: [BIND_CONFLICT] },
    'two-unbound-pvcs': {
      podPVCs: [unboundPVC, unboundPVC2],
      pvs: [pvNode1a, pvNode1b],
      expectedBindings: [
        ['unbound-pvc', 'pv-node1a'],
        ['unbound-pvc2', 'pv-node1b'],
      ],
    },
    'two-unbound-pvcs,order-by-size': {
      podPVCs: [unboundPVC2, unboundPVC],
      pvs: [pvNode1a, pvNode1b],
      expectedBindings: [
        ['unbound-pvc', 'pv-node1a'],
        ['unbound-pvc2', 'pv-node1b'],
      ],
    },
    'two-unbound-pvcs,partial-match': {
      podPVCs: [unboundPVC, unboundPVC2],
      pvs: [pvNode1a],
      expectedBindings: [['unbound-pvc', 'pv-node1a']],
      reasons: [BIND_CONFLICT],
    },
    'one-bound,one-unbound': {
      podPVCs: [unboundPVC, boundPVC],
      pvs: [pvBound, pvNode1a],
      expectedBindings: [['unbound-pvc', 'pv-node1a']],
    },
    'one-bound,one-unbound,no-match': {
      podPVCs: [unboundPVC, boundPVC],
      pvs: [pvBound, pvNode2],
      reasons: [BIND_CONFLICT],
    },
    'one-prebound,one-unbound': { podPVCs: [unboundPVC, preboundPVC], pvs: [pvNode1a, pvNode1b], shouldFail: true },
    'immediate-bound-pvc': { podPVCs: [immediateBoundPVC], pvs: [pvBoundImmediate] },
    'immediate-bound-pvc-wrong-node': {
      podPVCs: [immediateBoundPVC],
      pvs: [pvBoundImmediateNode2],
      reasons: [NODE_CONFLICT],
    },
    'immediate-unbound-pvc': { podPVCs: [immediateUnboundPVC], shouldFail: true },
    'immediate-unbound-pvc,delayed-mode-bound': {
      podPVCs: [immediateUnboundPVC, boundPVC],
      pvs: [pvBound],
      shouldFail: true,
    },
    'immediate-unbound-pvc,delayed-mode-unbound': { podPVCs: [immediateUnboundPVC, unboundPVC], shouldFail: true },
    'generic-ephemeral,no-pvc': {
      pod: makePod('test-pod', { ephemeral: ['no-such-pvc'], nodeName: 'node1' }),
      shouldFail: true,
    },
    'generic-ephemeral,with-pvc': {
      pod: makePod('test-pod', { ephemeral: ['test-volume'], nodeName: 'node1' }),
      cachePVCs: [correctGenericPVC],
      pvs: [pvBoundGeneric],
    },
    'generic-ephemeral,wrong-pvc': {
      pod: makePod('test-pod', { ephemeral: ['test-volume'], nodeName: 'node1' }),
      cachePVCs: [conflictingGenericPVC],
      pvs: [pvBoundGeneric],
      shouldFail: true,
    },
  };
  for (const [variant, driver] of Object.entries(CSI_DRIVER_VARIANTS)) {
    describe(variant, () => {
      for (const [name, c] of Object.entries(scenarios)) it(name, () => runFind(c, driver));
    });
  }
});

describe('TestFindPodVolumesWithProvisioning', () => {
  const scenarios: Record<string, FindCase> = {
    'one-provisioned': { podPVCs: [provisionedPVC], expectedProvisions: ['provisioned-pvc'], needsCapacity: true },
    'two-unbound-pvcs,one-matched,one-provisioned': {
      podPVCs: [unboundPVC, provisionedPVC],
      pvs: [pvNode1a],
      expectedBindings: [['unbound-pvc', 'pv-node1a']],
      expectedProvisions: ['provisioned-pvc'],
      needsCapacity: true,
    },
    'one-bound,one-provisioned': {
      podPVCs: [boundPVC, provisionedPVC],
      pvs: [pvBound],
      expectedProvisions: ['provisioned-pvc'],
      needsCapacity: true,
    },
    'one-binding,one-selected-node': {
      podPVCs: [boundPVC, selectedNodePVC],
      pvs: [pvBound],
      expectedProvisions: ['provisioned-pvc'],
      needsCapacity: true,
    },
    'immediate-unbound-pvc': { podPVCs: [immediateUnboundPVC], shouldFail: true },
    'one-immediate-bound,one-provisioned': {
      podPVCs: [immediateBoundPVC, provisionedPVC],
      pvs: [pvBoundImmediate],
      expectedProvisions: ['provisioned-pvc'],
      needsCapacity: true,
    },
    'invalid-provisioner': { podPVCs: [noProvisionerPVC], reasons: [BIND_CONFLICT] },
    'volume-topology-unsatisfied': { podPVCs: [topoMismatchPVC], reasons: [BIND_CONFLICT] },
  };
  for (const [variant, driver] of Object.entries(CSI_DRIVER_VARIANTS)) {
    describe(variant, () => {
      for (const [name, c] of Object.entries(scenarios)) it(name, () => runFind(c, driver));
    });
  }
});

describe('TestFindPodVolumesWithCSIMigration', () => {
  const scenarios: Record<string, { node: Node; csiNodes: CSINode[]; reasons?: string[] }> = {
    'pvc-bound': { node: node1Zone1, csiNodes: [csiNode1Migrated] },
    'pvc-bound,csinode-not-migrated': { node: node1Zone1, csiNodes: [csiNode1NotMigrated] },
    'pvc-bound,missing-csinode': { node: node1Zone1, csiNodes: [] },
    'pvc-bound,node-different-zone': { node: node1Zone2, csiNodes: [csiNode1Migrated], reasons: [NODE_CONFLICT] },
  };
  for (const [name, c] of Object.entries(scenarios)) {
    it(name, () => {
      const { binder } = env({
        pvs: [migrationPVBound],
        pvcs: [boundMigrationPVC],
        nodes: [c.node],
        csiNodes: c.csiNodes,
      });
      const pod = makePod('test-pod', { claims: [boundMigrationPVC], nodeName: 'node1' });
      assert.deepEqual(findPodVolumes(binder, pod, c.node).reasons, c.reasons ?? []);
    });
  }
});

/** validateAssume: the cache holds the expected PVs (claimRef set) and PVCs (selected-node set). */
function assertAssumed(
  binder: ClusterVolumeBinder,
  bindings: PodVolumes['staticBindings'],
  provisions: DynamicProvision[],
): void {
  for (const b of bindings) {
    const pv = binder.pvCache.get(b.pv.metadata.name)!;
    assert.deepEqual(pv.spec.claimRef?.name, b.pvc.metadata.name, `PV ${b.pv.metadata.name} claimRef`);
    assert.equal(pv.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
  }
  for (const p of provisions) {
    const pvc = binder.pvcCache.get(`testns/${p.pvc.metadata.name}`)!;
    assert.equal(pvc.metadata.annotations?.['volume.kubernetes.io/selected-node'], NODE_LABEL_VALUE);
  }
}

/** validateCacheRestored: every PV is its API object again, no PVC carries selected-node. */
function assertRestored(
  binder: ClusterVolumeBinder,
  bindings: PodVolumes['staticBindings'],
  provisions: DynamicProvision[],
): void {
  for (const b of bindings) {
    const name = b.pv.metadata.name;
    if (binder.pvCache.get(name))
      assert.equal(binder.pvCache.get(name), binder.pvCache.getAPI(name), `PV ${name} restored`);
  }
  for (const p of provisions) {
    const pvc = binder.pvcCache.get(`testns/${p.pvc.metadata.name}`);
    assert.equal(pvc?.metadata.annotations?.['volume.kubernetes.io/selected-node'], undefined);
  }
}

const binding = (pvc: PersistentVolumeClaim, pv: PersistentVolume) => ({
  pvc: structuredClone(pvc),
  pv: structuredClone(pv),
});

describe('TestAssumePodVolumes', () => {
  const scenarios: Record<
    string,
    {
      podPVCs: PersistentVolumeClaim[];
      pvs?: PersistentVolume[];
      bindings?: PodVolumes['staticBindings'];
      provisions?: DynamicProvision[];
      shouldFail?: boolean;
      expectedAllBound?: boolean;
      expectedBindings?: PodVolumes['staticBindings'];
    }
  > = {
    'all-bound': { podPVCs: [boundPVC], pvs: [pvBound], expectedAllBound: true },
    'one-binding': {
      podPVCs: [unboundPVC],
      bindings: [binding(unboundPVC, pvNode1a)],
      pvs: [pvNode1a],
      expectedBindings: [binding(unboundPVC, pvNode1aBound)],
    },
    'two-bindings': {
      podPVCs: [unboundPVC, unboundPVC2],
      bindings: [binding(unboundPVC, pvNode1a), binding(unboundPVC2, pvNode1b)],
      pvs: [pvNode1a, pvNode1b],
      expectedBindings: [binding(unboundPVC, pvNode1aBound), binding(unboundPVC2, pvNode1bBound)],
    },
    'pv-already-bound': {
      podPVCs: [unboundPVC],
      bindings: [binding(unboundPVC, pvNode1aBound)],
      pvs: [pvNode1aBound],
      expectedBindings: [binding(unboundPVC, pvNode1aBound)],
    },
    'tmpupdate-failed': {
      podPVCs: [unboundPVC],
      bindings: [binding(unboundPVC, pvNode1a), binding(unboundPVC2, pvNode1b)],
      pvs: [pvNode1a],
      shouldFail: true,
    },
    'one-binding, one-pvc-provisioned': {
      podPVCs: [unboundPVC, provisionedPVC],
      bindings: [binding(unboundPVC, pvNode1a)],
      pvs: [pvNode1a],
      provisions: [{ pvc: provisionedPVC }],
      expectedBindings: [binding(unboundPVC, pvNode1aBound)],
    },
    'one-binding, one-provision-tmpupdate-failed': {
      podPVCs: [unboundPVC, provisionedPVCHigherVersion],
      bindings: [binding(unboundPVC, pvNode1a)],
      pvs: [pvNode1a],
      provisions: [{ pvc: provisionedPVC2 }],
      shouldFail: true,
    },
  };
  for (const [name, c] of Object.entries(scenarios)) {
    it(name, () => {
      const { binder } = env({ pvs: c.pvs, pvcs: c.podPVCs });
      const pod = makePod('test-pod', { claims: c.podPVCs, nodeName: 'node1' });
      const podVolumes: PodVolumes = { staticBindings: c.bindings ?? [], dynamicProvisions: c.provisions ?? [] };
      if (c.shouldFail) {
        assert.throws(() => binder.assumePodVolumes(pod, 'node1', podVolumes));
        assertRestored(binder, podVolumes.staticBindings, podVolumes.dynamicProvisions);
        return;
      }
      const { allBound, assumed } = binder.assumePodVolumes(pod, 'node1', podVolumes);
      assert.equal(allBound, c.expectedAllBound ?? false);
      if (allBound) return;
      assertAssumed(binder, c.expectedBindings ?? [], c.provisions ?? []);
      assert.deepEqual(
        assumed.staticBindings.map((b) => b.pv.spec.claimRef?.name),
        (c.expectedBindings ?? []).map((b) => b.pv.spec.claimRef?.name),
      );
    });
  }
});

it('TestRevertAssumedPodVolumes', () => {
  const podPVCs = [unboundPVC, provisionedPVC];
  const { binder } = env({ pvs: [pvNode1a], pvcs: podPVCs });
  const pod = makePod('test-pod', { claims: podPVCs, nodeName: 'node1' });
  const podVolumes: PodVolumes = {
    staticBindings: [binding(unboundPVC, pvNode1a)],
    dynamicProvisions: [{ pvc: provisionedPVC }],
  };
  const { allBound, assumed } = binder.assumePodVolumes(pod, 'node1', podVolumes);
  assert.equal(allBound, false);
  assertAssumed(binder, [binding(unboundPVC, pvNode1aBound)], [{ pvc: selectedNodePVC }]);
  binder.revertAssumedPodVolumes(assumed);
  assertRestored(binder, podVolumes.staticBindings, podVolumes.dynamicProvisions);
  binder.revertAssumedPodVolumes(assumed); // idempotent
  assertRestored(binder, podVolumes.staticBindings, podVolumes.dynamicProvisions);
});

describe('TestBindAPIUpdate', () => {
  const addProvisionAnn = (pvc: PersistentVolumeClaim) => withSelectedNode(pvc, NODE_LABEL_VALUE);
  const scenarios: Record<
    string,
    {
      bindings: PodVolumes['staticBindings'];
      cachedPVs?: PersistentVolume[];
      apiPVs?: PersistentVolume[];
      provisionedPVCs: PersistentVolumeClaim[];
      cachedPVCs?: PersistentVolumeClaim[];
      apiPVCs?: PersistentVolumeClaim[];
      shouldFail?: boolean;
      /** [name, claimRef name or undefined] of the cached PVs after the call. */
      expectedPVs?: [string, string | undefined][];
      /** [name, selected-node or undefined] of the cached PVCs after the call. */
      expectedPVCs?: [string, string | undefined][];
    }
  > = {
    'nothing-to-bind-empty': { bindings: [], provisionedPVCs: [] },
    'one-binding': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      cachedPVs: [pvNode1a],
      provisionedPVCs: [],
      expectedPVs: [['pv-node1a', 'unbound-pvc']],
    },
    'two-bindings': {
      bindings: [binding(unboundPVC, pvNode1aBound), binding(unboundPVC2, pvNode1bBound)],
      cachedPVs: [pvNode1a, pvNode1b],
      provisionedPVCs: [],
      expectedPVs: [
        ['pv-node1a', 'unbound-pvc'],
        ['pv-node1b', 'unbound-pvc2'],
      ],
    },
    'api-already-updated': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      cachedPVs: [pvNode1aBound],
      provisionedPVCs: [],
      expectedPVs: [['pv-node1a', 'unbound-pvc']],
    },
    'api-update-failed': {
      bindings: [binding(unboundPVC, pvNode1aBound), binding(unboundPVC2, pvNode1bBound)],
      cachedPVs: [pvNode1a, pvNode1b],
      apiPVs: [pvNode1a, pvNode1bBoundHigherVersion],
      provisionedPVCs: [],
      shouldFail: true,
      expectedPVs: [
        ['pv-node1a', 'unbound-pvc'],
        ['pv-node1b', undefined],
      ],
    },
    'one-provisioned-pvc': {
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provisionedPVC)],
      cachedPVCs: [provisionedPVC],
      expectedPVCs: [['provisioned-pvc', NODE_LABEL_VALUE]],
    },
    'provision-api-update-failed': {
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provisionedPVC), addProvisionAnn(provisionedPVC2)],
      cachedPVCs: [provisionedPVC, provisionedPVC2],
      apiPVCs: [provisionedPVC, provisionedPVCHigherVersion],
      shouldFail: true,
      expectedPVCs: [
        ['provisioned-pvc', NODE_LABEL_VALUE],
        ['provisioned-pvc2', undefined],
      ],
    },
    'binding-succeed, provision-api-update-failed': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      cachedPVs: [pvNode1a],
      provisionedPVCs: [addProvisionAnn(provisionedPVC), addProvisionAnn(provisionedPVC2)],
      cachedPVCs: [provisionedPVC, provisionedPVC2],
      apiPVCs: [provisionedPVC, provisionedPVCHigherVersion],
      shouldFail: true,
      expectedPVs: [['pv-node1a', 'unbound-pvc']],
      expectedPVCs: [
        ['provisioned-pvc', NODE_LABEL_VALUE],
        ['provisioned-pvc2', undefined],
      ],
    },
  };
  for (const [name, c] of Object.entries(scenarios)) {
    it(name, async () => {
      // The static bindings' claims exist too: bindAPIUpdate holds them before writing their PVs.
      const claims = [...(c.cachedPVCs ?? []), ...c.bindings.map((b) => b.pvc)];
      const { cluster, binder } = env({ pvs: c.cachedPVs, pvcs: claims });
      for (const b of c.bindings) binder.pvCache.assume(b.pv);
      for (const pvc of c.provisionedPVCs) binder.pvcCache.assume(pvc);
      // The API moved on without the watch telling us yet: the writer sees the newer objects.
      for (const pv of c.apiPVs ?? []) {
        if (
          pv.metadata.resourceVersion !==
          cluster.store.get('PersistentVolume', pv.metadata.name)?.metadata.resourceVersion
        ) {
          cluster.writer.failUpdates.add(pv.metadata.name);
        }
      }
      for (const pvc of c.apiPVCs ?? []) {
        const key = `testns/${pvc.metadata.name}`;
        if (
          pvc.metadata.resourceVersion !== cluster.store.get('PersistentVolumeClaim', key)?.metadata.resourceVersion
        ) {
          cluster.writer.failUpdates.add(key);
        }
      }
      const podVolumes: PodVolumes = {
        staticBindings: c.bindings,
        dynamicProvisions: c.provisionedPVCs.map((pvc) => ({ pvc })),
      };
      if (c.shouldFail) await assert.rejects(binder.bindAPIUpdate(podVolumes));
      else await binder.bindAPIUpdate(podVolumes);
      for (const [pvName, claim] of c.expectedPVs ?? []) {
        assert.equal(binder.pvCache.get(pvName)?.spec.claimRef?.name, claim, `cached PV ${pvName}`);
      }
      for (const [pvcName, selected] of c.expectedPVCs ?? []) {
        const pvc = binder.pvcCache.get(`testns/${pvcName}`);
        assert.equal(
          pvc?.metadata.annotations?.['volume.kubernetes.io/selected-node'],
          selected,
          `cached PVC ${pvcName}`,
        );
      }
    });
  }
});

interface CheckCase {
  initPVs?: PersistentVolume[];
  initPVCs?: PersistentVolumeClaim[];
  bindings: PodVolumes['staticBindings'];
  provisionedPVCs: PersistentVolumeClaim[];
  apiPVs?: PersistentVolume[];
  apiPVCs?: PersistentVolumeClaim[];
  deletePVs?: boolean;
  deletePVCs?: boolean;
  nodes?: Node[];
  csiNodes?: CSINode[];
  shouldFail?: boolean;
  expectedBound?: boolean;
}

function runCheck(c: CheckCase): void {
  const pod = makePod('test-pod', { nodeName: 'node1' });
  const { cluster, binder } = env({
    pvs: c.initPVs,
    pvcs: c.initPVCs,
    nodes: c.nodes ?? [node1],
    csiNodes: c.csiNodes,
    pods: [pod],
  });
  for (const b of c.bindings) binder.pvCache.assume(b.pv);
  for (const pvc of c.provisionedPVCs) binder.pvcCache.assume(pvc);
  if (c.deletePVs) for (const pv of c.initPVs ?? []) cluster.remove(pv);
  else for (const pv of c.apiPVs ?? []) cluster.add(pv);
  if (c.deletePVCs) for (const pvc of c.initPVCs ?? []) cluster.remove(pvc);
  else for (const pvc of c.apiPVCs ?? []) cluster.add(pvc);
  const provisions = c.provisionedPVCs.map((pvc) => ({ pvc }));
  if (c.shouldFail) {
    assert.throws(() => binder.checkBindings(pod, 'node1', c.bindings, provisions));
    return;
  }
  assert.equal(binder.checkBindings(pod, 'node1', c.bindings, provisions), c.expectedBound ?? false);
}

describe('TestCheckBindings', () => {
  const addProvisionAnn = (pvc: PersistentVolumeClaim) => withSelectedNode(pvc, NODE_LABEL_VALUE);
  const pvRemoveClaimUID = (pv: PersistentVolume): PersistentVolume => ({
    ...pv,
    spec: { ...pv.spec, claimRef: { ...pv.spec.claimRef, uid: '' } },
  });
  const pvcSetEmptyAnnotations = (pvc: PersistentVolumeClaim): PersistentVolumeClaim => ({
    ...pvc,
    metadata: { ...pvc.metadata, annotations: undefined },
  });
  const scenarios: Record<string, CheckCase> = {
    'nothing-to-bind': { bindings: [], provisionedPVCs: [], expectedBound: true },
    'binding-bound': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      provisionedPVCs: [],
      initPVs: [pvNode1aBound],
      initPVCs: [boundPVCNode1a],
      expectedBound: true,
    },
    'binding-prebound': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      provisionedPVCs: [],
      initPVs: [pvNode1aBound],
      initPVCs: [preboundPVCNode1a],
    },
    'binding-unbound': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      provisionedPVCs: [],
      initPVs: [pvNode1aBound],
      initPVCs: [unboundPVC],
    },
    'binding-pvc-not-exists': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      provisionedPVCs: [],
      initPVs: [pvNode1aBound],
      shouldFail: true,
    },
    'binding-pv-not-exists': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      provisionedPVCs: [],
      initPVs: [pvNode1aBound],
      initPVCs: [boundPVCNode1a],
      deletePVs: true,
      shouldFail: true,
    },
    'binding-claimref-nil': {
      bindings: [binding(unboundPVC, withRV(pvNode1aBound, '1'))],
      provisionedPVCs: [],
      initPVs: [pvNode1a],
      initPVCs: [boundPVCNode1a],
      apiPVs: [pvNode1a],
      apiPVCs: [boundPVCNode1a],
      shouldFail: true,
    },
    'binding-claimref-uid-empty': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      provisionedPVCs: [],
      initPVs: [pvNode1aBound],
      initPVCs: [boundPVCNode1a],
      apiPVs: [pvRemoveClaimUID(pvNode1aBound)],
      apiPVCs: [boundPVCNode1a],
      shouldFail: true,
    },
    'binding-one-bound,one-unbound': {
      bindings: [binding(unboundPVC, pvNode1aBound), binding(unboundPVC2, pvNode1bBound)],
      provisionedPVCs: [],
      initPVs: [pvNode1aBound, pvNode1bBound],
      initPVCs: [boundPVCNode1a, unboundPVC2],
    },
    'provisioning-pvc-bound': {
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provisionedPVC)],
      initPVs: [pvBound],
      initPVCs: [provisionedPVCBound],
      apiPVCs: [addProvisionAnn(provisionedPVCBound)],
      expectedBound: true,
    },
    'provisioning-pvc-unbound': {
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provisionedPVC)],
      initPVCs: [addProvisionAnn(provisionedPVC)],
    },
    'provisioning-pvc-not-exists': {
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provisionedPVC)],
      initPVCs: [provisionedPVC],
      deletePVCs: true,
      shouldFail: true,
    },
    'provisioning-pvc-annotations-nil': {
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provisionedPVC)],
      initPVCs: [provisionedPVC],
      apiPVCs: [provisionedPVC],
      shouldFail: true,
    },
    'provisioning-pvc-selected-node-dropped': {
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provisionedPVC)],
      initPVCs: [provisionedPVC],
      apiPVCs: [pvcSetEmptyAnnotations(provisionedPVC)],
      shouldFail: true,
    },
    'provisioning-pvc-selected-node-wrong-node': {
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provisionedPVC)],
      initPVCs: [provisionedPVC],
      apiPVCs: [withSelectedNode(provisionedPVC, 'wrong-node')],
      shouldFail: true,
    },
    'binding-bound-provisioning-unbound': {
      bindings: [binding(unboundPVC, pvNode1aBound)],
      provisionedPVCs: [addProvisionAnn(provisionedPVC)],
      initPVs: [pvNode1aBound],
      initPVCs: [boundPVCNode1a, addProvisionAnn(provisionedPVC)],
    },
    'tolerate-provisioning-pvc-bound-pv-not-found': {
      initPVs: [pvNode1a],
      initPVCs: [provisionedPVC],
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provisionedPVC)],
      apiPVCs: [addProvisionAnn(provisionedPVCBound)],
      deletePVs: true,
    },
  };
  for (const [name, c] of Object.entries(scenarios)) it(name, () => runCheck(c));
});

describe('TestCheckBindingsWithCSIMigration', () => {
  const addProvisionAnn = (pvc: PersistentVolumeClaim) => withSelectedNode(pvc, NODE_LABEL_VALUE);
  const scenarios: Record<string, CheckCase> = {
    'provisioning-pvc-bound': {
      bindings: [],
      provisionedPVCs: [addProvisionAnn(provMigrationPVCBound)],
      initPVs: [migrationPVBound],
      initPVCs: [provMigrationPVCBound],
      nodes: [node1Zone1],
      csiNodes: [csiNode1Migrated],
      apiPVCs: [addProvisionAnn(provMigrationPVCBound)],
      expectedBound: true,
    },
    'binding-node-pv-same-zone': {
      bindings: [binding(unboundPVC, migrationPVBoundToUnbound)],
      provisionedPVCs: [],
      initPVs: [migrationPVBoundToUnbound],
      initPVCs: [unboundPVC],
      nodes: [node1Zone1],
      csiNodes: [csiNode1Migrated],
    },
    'binding-without-csinode': {
      bindings: [binding(unboundPVC, migrationPVBoundToUnbound)],
      provisionedPVCs: [],
      initPVs: [migrationPVBoundToUnbound],
      initPVCs: [unboundPVC],
      nodes: [node1Zone1],
      csiNodes: [],
    },
    'binding-non-migrated-plugin': {
      bindings: [binding(unboundPVC, migrationPVBoundToUnbound)],
      provisionedPVCs: [],
      initPVs: [migrationPVBoundToUnbound],
      initPVCs: [unboundPVC],
      nodes: [node1Zone1],
      csiNodes: [csiNode1NotMigrated],
    },
    'binding-node-pv-in-different-zones': {
      bindings: [binding(unboundPVC, migrationPVBoundToUnbound)],
      provisionedPVCs: [],
      initPVs: [migrationPVBoundToUnbound],
      initPVCs: [unboundPVC],
      nodes: [node1Zone2],
      csiNodes: [csiNode1Migrated],
      shouldFail: true,
    },
    'binding-node-pv-different-zones-migration-off': {
      bindings: [binding(unboundPVC, nonmigrationPVBoundToUnbound)],
      provisionedPVCs: [],
      initPVs: [nonmigrationPVBoundToUnbound],
      initPVCs: [unboundPVC],
      nodes: [node1Zone2],
      csiNodes: [csiNode1Migrated],
    },
  };
  for (const [name, c] of Object.entries(scenarios)) it(name, () => runCheck(c));
});

describe('TestBindPodVolumes', () => {
  type Delay = (cluster: TestCluster, pod: Pod) => void;
  const scenarios: Record<
    string,
    {
      nodes?: Node[];
      initPVs?: PersistentVolume[];
      initPVCs?: PersistentVolumeClaim[];
      binding?: PodVolumes['staticBindings'][number];
      claimToProvision?: PersistentVolumeClaim;
      apiPV?: PersistentVolume;
      apiPVC?: PersistentVolumeClaim;
      delayFunc?: Delay;
      shouldFail?: boolean;
      timeoutSeconds?: number;
      /** The provisioned claim's volumeName once bound. */
      expectClaimVolume?: string;
    }
  > = {
    'nothing-to-bind-empty': {},
    'already-bound': {
      binding: binding(unboundPVC, pvNode1aBound),
      initPVs: [pvNode1aBound],
      initPVCs: [boundPVCNode1a],
    },
    // Upstream waits here until the PV controller binds the claim. This binder writes the claim's half itself, so a
    // static binding succeeds with no controller at all (see 'a static binding writes the claim's half'); the waiting
    // cases below wait on a provisioned claim instead.
    'binding-static-pv-succeeds-after-time': {
      initPVs: [pvNode1a],
      initPVCs: [unboundPVC],
      binding: binding(unboundPVC, pvNode1aBound),
    },
    'binding-dynamic-pv-succeeds-after-time': {
      claimToProvision: withSelectedNode(provisionedPVC, 'node1'),
      initPVCs: [provisionedPVC],
      delayFunc: (cluster) => {
        const pvc = cluster.store.get('PersistentVolumeClaim', 'testns/provisioned-pvc')!;
        cluster.add(makeTestPV('dynamic-pv', 'node1', '1G', '1', pvc, WAIT_CLASS));
        cluster.add({
          ...pvc,
          spec: { ...pvc.spec, volumeName: 'dynamic-pv' },
          metadata: {
            ...pvc.metadata,
            annotations: { ...pvc.metadata.annotations, 'pv.kubernetes.io/bind-completed': 'yes' },
          },
        });
      },
    },
    // Upstream waits until the PV controller binds the claim to the provisioner's PV. This binder writes the claim's
    // half once the PV names the claim: no controller here binds it, and the bind still succeeds.
    'provisioned-claim-half-written-once-the-pv-names-it': {
      claimToProvision: withSelectedNode(provisionedPVC, 'node1'),
      initPVCs: [provisionedPVC],
      delayFunc: (cluster) => {
        const pvc = cluster.store.get('PersistentVolumeClaim', 'testns/provisioned-pvc')!;
        cluster.add(makeTestPV('dynamic-pv', 'node1', '1G', '1', pvc, WAIT_CLASS));
      },
      expectClaimVolume: 'dynamic-pv',
    },
    'bound-by-pv-controller-before-bind': {
      initPVs: [pvNode1a],
      initPVCs: [unboundPVC],
      binding: binding(unboundPVC, pvNode1aBound),
      apiPV: pvNode1aBound,
      apiPVC: boundPVCNode1a,
      // Upstream fails (the PV write conflicts with the newer object); here the 409 is read back, and a PV already
      // prebound to the same claim is the write done, so the bind waits and succeeds.
    },
    'pod-deleted-after-time': {
      claimToProvision: withSelectedNode(provisionedPVC, 'node1'),
      initPVCs: [provisionedPVC],
      delayFunc: (cluster, pod) => cluster.remove(pod),
      shouldFail: true,
    },
    'binding-times-out': {
      claimToProvision: withSelectedNode(provisionedPVC, 'node1'),
      initPVCs: [provisionedPVC],
      shouldFail: true,
      timeoutSeconds: 0.05,
    },
    'binding-fails': {
      binding: binding(unboundPVC2, pvNode1bBound),
      initPVs: [pvNode1b],
      initPVCs: [unboundPVC2],
      apiPV: withRV(pvNode1b, '7'),
      shouldFail: true,
    },
    'check-fails': {
      claimToProvision: withSelectedNode(provisionedPVC, 'node1'),
      initPVCs: [provisionedPVC],
      delayFunc: (cluster) => cluster.remove(provisionedPVC),
      shouldFail: true,
    },
    'node-affinity-fails': {
      binding: binding(unboundPVC, pvNode1aBound),
      initPVs: [pvNode1aBound],
      initPVCs: [boundPVCNode1a],
      nodes: [node1NoLabels],
      shouldFail: true,
    },
    'node-affinity-fails-dynamic-provisioning': {
      initPVs: [pvNode1a, pvNode2],
      initPVCs: [selectedNodePVC],
      claimToProvision: selectedNodePVC,
      nodes: [node1, node2],
      delayFunc: (cluster) => {
        const pvc = cluster.store.get('PersistentVolumeClaim', 'testns/provisioned-pvc')!;
        cluster.add({
          ...pvc,
          spec: { ...pvc.spec, volumeName: 'pv-node2' },
          metadata: {
            ...pvc.metadata,
            annotations: { ...pvc.metadata.annotations, 'pv.kubernetes.io/bind-completed': 'yes' },
          },
        });
      },
      shouldFail: true,
    },
  };
  for (const [name, c] of Object.entries(scenarios)) {
    it(name, async () => {
      const pod = makePod('test-pod', { nodeName: 'node1' });
      const { cluster, binder } = env({ pvs: c.initPVs, pvcs: c.initPVCs, nodes: c.nodes ?? [node1], pods: [pod] });
      binder.bindTimeoutSeconds = c.timeoutSeconds ?? 5;
      const bindings = c.binding ? [c.binding] : [];
      const provisions = c.claimToProvision ? [{ pvc: c.claimToProvision }] : [];
      for (const b of bindings) binder.pvCache.assume(b.pv);
      for (const p of provisions) binder.pvcCache.assume(p.pvc);
      if (c.apiPV) cluster.add(c.apiPV);
      if (c.apiPVC) cluster.add(c.apiPVC);
      if (c.delayFunc) setTimeout(() => c.delayFunc!(cluster, pod), 20);
      const done = binder.bindPodVolumes(pod, 'node1', { staticBindings: bindings, dynamicProvisions: provisions });
      if (c.shouldFail) await assert.rejects(done);
      else await done;
      if (c.expectClaimVolume) {
        const pvc = cluster.store.get('PersistentVolumeClaim', 'testns/provisioned-pvc')!;
        assert.equal(pvc.spec.volumeName, c.expectClaimVolume);
        assert.equal(pvc.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
        assert.equal(pvc.metadata.annotations?.['pv.kubernetes.io/bind-completed'], undefined, "the controller's");
      }
    });
  }
});

describe('a waiting bind wakes on the objects it reads, with no timer', () => {
  // Timers are mocked and never advanced: neither the once-a-second check nor the timeout can finish the bind, so
  // only the change of an object it reads can.
  const cases: Record<string, { deliver: (cluster: TestCluster, pod: Pod) => void; shouldFail: boolean }> = {
    'the PV naming its provisioned claim': {
      deliver: (cluster) => {
        const pvc = cluster.store.get('PersistentVolumeClaim', 'testns/provisioned-pvc')!;
        cluster.add(makeTestPV('dynamic-pv', 'node1', '1G', '1', pvc, WAIT_CLASS));
      },
      shouldFail: false,
    },
    'its pod deleted': { deliver: (cluster, pod) => cluster.remove(pod), shouldFail: true },
  };
  for (const [name, c] of Object.entries(cases)) {
    it(name, async (t) => {
      t.mock.timers.enable({ apis: ['setInterval', 'setTimeout'] });
      const pod = makePod('test-pod', { nodeName: 'node1' });
      const { cluster, binder } = env({ pvcs: [provisionedPVC], nodes: [node1], pods: [pod] });
      const claim = withSelectedNode(provisionedPVC, 'node1');
      binder.pvcCache.assume(claim);
      let outcome: 'bound' | 'failed' | undefined;
      const done = binder
        .bindPodVolumes(pod, 'node1', { staticBindings: [], dynamicProvisions: [{ pvc: claim }] })
        .then(
          () => (outcome = 'bound'),
          () => (outcome = 'failed'),
        );
      const turns = async () => {
        for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
      };
      await turns();
      assert.equal(outcome, undefined, 'waits while nothing it reads changed');
      c.deliver(cluster, pod);
      await turns();
      assert.equal(outcome, c.shouldFail ? 'failed' : 'bound');
      await done;
    });
  }
});

it('a bind that provisions has one deadline: its two waits share bindTimeoutSeconds', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'setTimeout', 'Date'] });
  const pod = makePod('test-pod', { nodeName: 'node1' });
  const { cluster, binder } = env({ pvcs: [provisionedPVC], nodes: [node1], pods: [pod] });
  binder.bindTimeoutSeconds = 10;
  const claim = withSelectedNode(provisionedPVC, 'node1');
  binder.pvcCache.assume(claim);
  // The claim's half is written, but its watch event never arrives: the second wait (for it) never ends by itself.
  const bindClaim = cluster.writer.bindClaimToVolume.bind(cluster.writer);
  cluster.writer.bindClaimToVolume = async (...args) => withRV(await bindClaim(...args), '999999');
  let outcome: string | undefined;
  const done = binder.bindPodVolumes(pod, 'node1', { staticBindings: [], dynamicProvisions: [{ pvc: claim }] }).then(
    () => (outcome = 'bound'),
    (err: Error) => (outcome = err.message),
  );
  const turns = async () => {
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  await turns();
  t.mock.timers.tick(6_000);
  const pvc = cluster.store.get('PersistentVolumeClaim', 'testns/provisioned-pvc')!;
  cluster.add(makeTestPV('dynamic-pv', 'node1', '1G', '1', pvc, WAIT_CLASS));
  await turns();
  assert.equal(outcome, undefined, 'provisioned after 6 s; now waiting for the claim');
  t.mock.timers.tick(4_500);
  await turns();
  assert.match(outcome ?? '', /context deadline exceeded/, '10.5 s after the bind started');
  await done;
});

it('TestFindAssumeVolumes', () => {
  const { binder } = env({ pvs: [pvNode2, pvNode1a, pvNode1c], pvcs: [unboundPVC] });
  const pod = makePod('test-pod', { claims: [unboundPVC], nodeName: 'node1' });
  const first = findPodVolumes(binder, pod, testNode);
  assert.deepEqual(first.reasons, []);
  const { allBound, assumed } = binder.assumePodVolumes(pod, 'node1', first.podVolumes);
  assert.equal(allBound, false);
  assertAssumed(binder, assumed.staticBindings, []);
  // After assume, finding again always returns the PV pre-bound by the assumption.
  for (let i = 0; i < 50; i++) {
    const again = findPodVolumes(binder, pod, testNode);
    assert.deepEqual(again.reasons, []);
    assert.deepEqual(names(again.podVolumes.staticBindings), names(assumed.staticBindings));
  }
});

describe('TestCapacity', () => {
  const scenarios: Record<
    string,
    { capacities?: CSIStorageCapacity[]; expectedCapacity?: CSIStorageCapacity; reasons?: string[] }
  > = {
    'network-attached': { capacities: [networkAttachedCapacity], expectedCapacity: networkAttachedCapacity },
    'local-storage': { capacities: [node1Capacity], expectedCapacity: node1Capacity },
    // Upstream's three objects share one name: the last one added replaces the others.
    multiple: { capacities: [networkAttachedCapacity, node2Capacity, node1Capacity], expectedCapacity: node1Capacity },
    'no-storage': { reasons: [NOT_ENOUGH_SPACE] },
    'wrong-node': {
      capacities: [makeCapacity('net', WAIT_CLASS_WITH_PROVISIONER, node2, '1Gi', '')],
      reasons: [NOT_ENOUGH_SPACE],
    },
    'wrong-storage-class': {
      capacities: [makeCapacity('net', WAIT_CLASS, node1, '1Gi', '')],
      reasons: [NOT_ENOUGH_SPACE],
    },
    'insufficient-storage': {
      capacities: [makeCapacity('net', WAIT_CLASS_WITH_PROVISIONER, node1, '1Mi', '')],
      reasons: [NOT_ENOUGH_SPACE],
    },
    'insufficient-volume-size': {
      capacities: [makeCapacity('net', WAIT_CLASS_WITH_PROVISIONER, node1, '1Gi', '1Mi')],
      reasons: [NOT_ENOUGH_SPACE],
    },
    'zero-storage': {
      capacities: [makeCapacity('net', WAIT_CLASS_WITH_PROVISIONER, node1, '0Mi', '')],
      reasons: [NOT_ENOUGH_SPACE],
    },
    'zero-volume-size': {
      capacities: [makeCapacity('net', WAIT_CLASS_WITH_PROVISIONER, node1, '', '0Mi')],
      reasons: [NOT_ENOUGH_SPACE],
    },
    'nil-storage': {
      capacities: [makeCapacity('net', WAIT_CLASS_WITH_PROVISIONER, node1, '', '')],
      reasons: [NOT_ENOUGH_SPACE],
    },
  };
  for (const optIn of [true, false]) {
    describe(`CSIDriver.StorageCapacity=${optIn}`, () => {
      for (const [name, c] of Object.entries(scenarios)) {
        it(name, () => {
          const { binder } = env({
            pvcs: [provisionedPVC],
            csiDriver: makeCSIDriver(PROVISIONER, { storageCapacity: optIn }),
            capacities: c.capacities,
          });
          const pod = makePod('test-pod', { claims: [provisionedPVC], nodeName: 'node1' });
          const result = findPodVolumes(binder, pod, testNode);
          assert.deepEqual(result.reasons, optIn ? (c.reasons ?? []) : []);
          if (optIn && c.reasons) return;
          assert.deepEqual(
            result.podVolumes.dynamicProvisions.map((p) => [p.pvc.metadata.name, p.nodeCapacity?.nodeTopology]),
            [['provisioned-pvc', optIn ? c.expectedCapacity?.nodeTopology : undefined]],
          );
        });
      }
    });
  }
});

it('a claim to provision names its external provisioner with selected-node, as the PV controller would next', () => {
  const inTree = makeTestPVC('in-tree-pvc', '1Gi', '', PVC_UNBOUND, '', '1', 'in-tree-class');
  const { binder, cluster } = env({ pvcs: [provisionedPVC, inTree] });
  cluster.add(makeStorageClass('in-tree-class', { provisioner: 'kubernetes.io/gce-pd' }));
  const pod = makePod('test-pod', { claims: [provisionedPVC, inTree], nodeName: 'node1' });
  const { assumed } = binder.assumePodVolumes(pod, 'node1', {
    staticBindings: [],
    dynamicProvisions: [{ pvc: provisionedPVC }, { pvc: inTree }],
  });
  const [external, migrated] = assumed.dynamicProvisions.map((p) => p.pvc.metadata.annotations ?? {});
  assert.deepEqual(external, {
    'volume.kubernetes.io/selected-node': 'node1',
    'volume.kubernetes.io/storage-provisioner': PROVISIONER,
    'volume.beta.kubernetes.io/storage-provisioner': PROVISIONER,
  });
  // The controller may name a CSI driver for an in-tree provisioner (CSI migration): left to it.
  assert.deepEqual(migrated, { 'volume.kubernetes.io/selected-node': 'node1' });
});

describe("a provisioned claim's half the PV controller left Pending", () => {
  // The controller's claim worker synced our half before its informer had the provisioner's PV ("will try again next
  // time"), then marked the PV Bound without syncing the claim again: only its periodic resync would finish it.
  async function halfWritten(t: TestContext, o: { watchBehind?: boolean } = {}) {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const pod = makePod('test-pod', { nodeName: 'node1' });
    const { cluster, binder } = env({ pvcs: [provisionedPVC], nodes: [node1], pods: [pod] });
    const claim = withSelectedNode(provisionedPVC, 'node1');
    binder.pvcCache.assume(claim);
    if (o.watchBehind)
      cluster.writer.holdBack = (kind, obj) =>
        kind === 'PersistentVolumeClaim' && Boolean((obj as PersistentVolumeClaim).spec.volumeName);
    const done = binder.bindPodVolumes(pod, 'node1', { staticBindings: [], dynamicProvisions: [{ pvc: claim }] });
    const pvc = () => cluster.store.get('PersistentVolumeClaim', 'testns/provisioned-pvc')!;
    cluster.add(makeTestPV('dynamic-pv', 'node1', '1G', '1', pvc(), WAIT_CLASS));
    // The bind waits for the watch to show its writes: with the watch behind, it ends once the test delivers them.
    if (o.watchBehind)
      for (let i = 0; i < 100 && cluster.writer.heldCount === 0; i++) await new Promise((r) => setImmediate(r));
    else await done;
    cluster.writer.holdBack = undefined;
    assert.equal(pvc().spec.volumeName, o.watchBehind ? undefined : 'dynamic-pv', 'our half, as the watch has it');
    const markPVBound = () => {
      const pv = cluster.store.get('PersistentVolume', 'dynamic-pv')!;
      cluster.add({ ...pv, status: { phase: 'Bound' } });
    };
    const completed = () => pvc().metadata.annotations?.['pv.kubernetes.io/bind-completed'];
    return { cluster, binder, pvc, markPVBound, completed, done };
  }
  const tick = async (t: TestContext, ms: number) => {
    t.mock.timers.tick(ms);
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  };

  it('gets bind-completed from us once the controller marked its PV Bound and did not write the claim within the grace', async (t) => {
    const { binder, markPVBound, completed } = await halfWritten(t);
    await tick(t, 10 * GRACE_MS);
    assert.equal(completed(), undefined, 'not before the controller has the PV (it marks the PV Bound)');
    markPVBound();
    await tick(t, GRACE_MS - 1);
    assert.equal(completed(), undefined, 'the grace: the controller writes the claim right after the PV');
    await tick(t, 1);
    assert.equal(completed(), 'yes');
    binder.close();
  });

  it('gets bind-completed from us when the watch delivers our half after the controller marked the PV Bound', async (t) => {
    const { cluster, binder, markPVBound, completed, done } = await halfWritten(t, { watchBehind: true });
    markPVBound();
    await tick(t, 2 * GRACE_MS); // the bind itself gives up after 10 s without the watch
    assert.equal(completed(), undefined, 'not while the watch has not shown our half');
    cluster.writer.deliverHeld();
    await done;
    await tick(t, GRACE_MS);
    assert.equal(completed(), 'yes');
    binder.close();
  });

  it('gets bind-completed from us when the watch delivers our half before the controller marks the PV Bound', async (t) => {
    const { cluster, binder, markPVBound, completed, done } = await halfWritten(t, { watchBehind: true });
    cluster.writer.deliverHeld();
    await done;
    await tick(t, 10 * GRACE_MS);
    assert.equal(completed(), undefined, 'not before the controller has the PV');
    markPVBound();
    await tick(t, GRACE_MS);
    assert.equal(completed(), 'yes');
    binder.close();
  });

  it('gets nothing more from us when the controller completes it within the grace', async (t) => {
    const { cluster, binder, pvc, markPVBound } = await halfWritten(t);
    markPVBound();
    const controllers = { ...pvc(), metadata: { ...pvc().metadata, annotations: { ...pvc().metadata.annotations } } };
    controllers.metadata.annotations['pv.kubernetes.io/bind-completed'] = 'yes';
    cluster.add(controllers);
    const writes = cluster.writer.updates.length;
    await tick(t, 2 * GRACE_MS);
    assert.equal(cluster.writer.updates.length, writes);
    binder.close();
  });
});
