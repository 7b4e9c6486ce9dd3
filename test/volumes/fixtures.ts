// Builders named after upstream's binder_test.go helpers (makeTestPVC, makeTestPV, makePod, makeCapacity...), and a
// small in-memory cluster: a store fed directly plus a writer with the API's resourceVersion preconditions.
import { ClusterStore } from '../../src/cluster/store.ts';
import type {
  AnyObject,
  CSINode,
  CSIStorageCapacity,
  Kind,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
} from '../../src/cluster/types.ts';
import {
  type ClusterWriter,
  claimBoundToVolume,
  type PodPrecondition,
  unboundVolume,
  WriteError,
} from '../../src/cluster/writer.ts';
import { ClusterVolumeBinder } from '../../src/volumes/volume-binder.ts';
import { capacityAccountingUnderTest } from '../helpers/capacity-accounting.ts';
import * as build from '../helpers/objects.ts';

export const NODE_LABEL_KEY = 'nodeKey';
export const NODE_LABEL_VALUE = 'node1';
export const PROVISIONER = 'test-provisioner';
export const WAIT_CLASS = 'waitClass';
export const IMMEDIATE_CLASS = 'immediateClass';
export const WAIT_CLASS_WITH_PROVISIONER = 'waitClassWithProvisioner';
export const TOPO_MISMATCH_CLASS = 'topoMismatchClass';
export const POD_UID = 'test-pod-uid';

export const PVC_UNBOUND = 0;
export const PVC_PREBOUND = 1;
export const PVC_BOUND = 2;
export const PVC_SELECTED_NODE = 3;

export function makeTestPVC(
  name: string,
  size: string,
  node: string,
  state: number,
  pvName: string,
  resourceVersion: string,
  className: string | undefined,
): PersistentVolumeClaim {
  return build.makePVC(name, {
    namespace: 'testns',
    uid: 'pvc-uid',
    resourceVersion,
    className,
    size,
    ...(state === PVC_BOUND || state === PVC_PREBOUND ? { volumeName: pvName } : {}),
    bindCompleted: state === PVC_BOUND,
    ...(state === PVC_SELECTED_NODE ? { annotations: { 'volume.kubernetes.io/selected-node': node } } : {}),
    spec: { volumeMode: 'Filesystem' },
  });
}

export function makeTestPV(
  name: string,
  node: string,
  capacity: string,
  version: string,
  boundTo: PersistentVolumeClaim | undefined,
  className: string,
): PersistentVolume {
  return build.makePV(name, {
    resourceVersion: version,
    className,
    size: capacity,
    phase: 'Available',
    ...(node === '' ? {} : { affinity: { [NODE_LABEL_KEY]: [node] } }),
    ...(boundTo ? { annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' } } : {}),
    spec: {
      volumeMode: 'Filesystem',
      ...(boundTo
        ? {
            claimRef: {
              kind: 'PersistentVolumeClaim',
              apiVersion: 'v1',
              resourceVersion: boundTo.metadata.resourceVersion,
              name: boundTo.metadata.name,
              namespace: boundTo.metadata.namespace,
              uid: boundTo.metadata.uid,
            },
          }
        : {}),
    },
  });
}

/** An in-tree GCE PD PV (migratable) or an RBD PV (not), zone-labelled, with no affinity of its own. */
export function makeTestPVForCSIMigration(
  labels: Record<string, string>,
  pvc: PersistentVolumeClaim,
  migrationEnabled: boolean,
): PersistentVolume {
  const pv = makeTestPV('pv-migration-bound', 'node1', '1G', '1', pvc, WAIT_CLASS);
  delete pv.spec.nodeAffinity;
  pv.metadata.labels = labels;
  if (migrationEnabled)
    pv.spec.gcePersistentDisk = { pdName: 'test-disk', fsType: 'ext4', partition: 0, readOnly: false };
  else pv.spec.rbd = { image: 'test-disk' };
  return pv;
}

export function withSelectedNode(pvc: PersistentVolumeClaim, node: string): PersistentVolumeClaim {
  return {
    ...pvc,
    metadata: {
      ...pvc.metadata,
      annotations: { ...pvc.metadata.annotations, 'volume.kubernetes.io/selected-node': node },
    },
  };
}

export function withRV<T extends AnyObject>(obj: T, resourceVersion: string): T {
  return { ...obj, metadata: { ...obj.metadata, resourceVersion } };
}

/** The binder tests' pod (upstream binder_test's makePod): in testns, uid POD_UID unless given. */
export function makePod(
  name: string,
  opts: { claims?: PersistentVolumeClaim[]; ephemeral?: string[]; nodeName?: string; uid?: string } = {},
): Pod {
  const volumes = [
    ...(opts.claims ?? []).map((c, i) => ({ name: `vol${i}`, persistentVolumeClaim: { claimName: c.metadata.name } })),
    ...(opts.ephemeral ?? []).map((v) => ({ name: v, ephemeral: { volumeClaimTemplate: { spec: {} } } })),
  ];
  return build.makePod(name, {
    namespace: 'testns',
    uid: opts.uid ?? POD_UID,
    ...(volumes.length > 0 ? { volumes } : {}),
    ...(opts.nodeName ? { nodeName: opts.nodeName } : {}),
  });
}

export function makeGenericEphemeralPVC(volumeName: string, owned: boolean): PersistentVolumeClaim {
  const pvc = makeTestPVC(`test-pod-${volumeName}`, '1G', '', PVC_BOUND, 'pv-bound', '1', IMMEDIATE_CLASS);
  if (owned)
    pvc.metadata.ownerReferences = [
      { apiVersion: 'v1', kind: 'Pod', name: 'test-pod', uid: POD_UID, controller: true },
    ];
  return pvc;
}

export function makeCSINode(name: string, migratedPlugin: string, drivers: CSINode['spec']['drivers'] = []): CSINode {
  return build.makeCSINode(name, {
    annotations: { 'storage.alpha.kubernetes.io/migrated-plugins': migratedPlugin },
    drivers,
  });
}

export function makeCapacity(
  name: string,
  storageClassName: string,
  node: Node | undefined,
  capacity: string,
  maximumVolumeSize: string,
): CSIStorageCapacity {
  return build.makeCSIStorageCapacity(name, {
    namespace: '',
    className: storageClassName,
    nodeTopology: node ? { matchLabels: { [NODE_LABEL_KEY]: node.metadata.labels?.[NODE_LABEL_KEY] ?? '' } } : {},
    capacity,
    maximumVolumeSize,
  });
}

export function storageClasses(): StorageClass[] {
  return [
    build.makeStorageClass(WAIT_CLASS_WITH_PROVISIONER, {
      provisioner: PROVISIONER,
      allowedTopologies: [
        { matchLabelExpressions: [{ key: NODE_LABEL_KEY, values: [NODE_LABEL_VALUE, 'reference-value'] }] },
      ],
    }),
    build.makeStorageClass(IMMEDIATE_CLASS, { mode: 'Immediate', provisioner: '' }),
    build.makeStorageClass(WAIT_CLASS),
    build.makeStorageClass(TOPO_MISMATCH_CLASS, {
      provisioner: PROVISIONER,
      allowedTopologies: [{ matchLabelExpressions: [{ key: NODE_LABEL_KEY, values: ['reference-value'] }] }],
    }),
  ];
}

// Upstream's shared objects.
export const unboundPVC = makeTestPVC('unbound-pvc', '1G', '', PVC_UNBOUND, '', '1', WAIT_CLASS);
export const unboundPVC2 = makeTestPVC('unbound-pvc2', '5G', '', PVC_UNBOUND, '', '1', WAIT_CLASS);
export const preboundPVC = makeTestPVC('prebound-pvc', '1G', '', PVC_PREBOUND, 'pv-node1a', '1', WAIT_CLASS);
export const preboundPVCNode1a = makeTestPVC('unbound-pvc', '1G', '', PVC_PREBOUND, 'pv-node1a', '1', WAIT_CLASS);
export const boundPVC = makeTestPVC('bound-pvc', '1G', '', PVC_BOUND, 'pv-bound', '1', WAIT_CLASS);
export const boundPVCNode1a = makeTestPVC('unbound-pvc', '1G', '', PVC_BOUND, 'pv-node1a', '1', WAIT_CLASS);
export const immediateUnboundPVC = makeTestPVC(
  'immediate-unbound-pvc',
  '1G',
  '',
  PVC_UNBOUND,
  '',
  '1',
  IMMEDIATE_CLASS,
);
export const immediateBoundPVC = makeTestPVC(
  'immediate-bound-pvc',
  '1G',
  '',
  PVC_BOUND,
  'pv-bound-immediate',
  '1',
  IMMEDIATE_CLASS,
);
export const provisionedPVC = makeTestPVC(
  'provisioned-pvc',
  '1Gi',
  '',
  PVC_UNBOUND,
  '',
  '1',
  WAIT_CLASS_WITH_PROVISIONER,
);
export const provisionedPVC2 = makeTestPVC(
  'provisioned-pvc2',
  '1Gi',
  '',
  PVC_UNBOUND,
  '',
  '1',
  WAIT_CLASS_WITH_PROVISIONER,
);
export const provisionedPVCHigherVersion = makeTestPVC(
  'provisioned-pvc2',
  '1Gi',
  '',
  PVC_UNBOUND,
  '',
  '2',
  WAIT_CLASS_WITH_PROVISIONER,
);
export const provisionedPVCBound = makeTestPVC(
  'provisioned-pvc',
  '1Gi',
  '',
  PVC_BOUND,
  'pv-bound',
  '1',
  WAIT_CLASS_WITH_PROVISIONER,
);
export const noProvisionerPVC = makeTestPVC('no-provisioner-pvc', '1Gi', '', PVC_UNBOUND, '', '1', WAIT_CLASS);
export const topoMismatchPVC = makeTestPVC('topo-mismatch-pvc', '1Gi', '', PVC_UNBOUND, '', '1', TOPO_MISMATCH_CLASS);
export const selectedNodePVC = makeTestPVC(
  'provisioned-pvc',
  '1Gi',
  NODE_LABEL_VALUE,
  PVC_SELECTED_NODE,
  '',
  '1',
  WAIT_CLASS_WITH_PROVISIONER,
);
export const boundMigrationPVC = makeTestPVC(
  'pvc-migration-bound',
  '1G',
  '',
  PVC_BOUND,
  'pv-migration-bound',
  '1',
  WAIT_CLASS,
);
export const provMigrationPVCBound = makeTestPVC(
  'pvc-migration-provisioned',
  '1Gi',
  '',
  PVC_BOUND,
  'pv-migration-bound',
  '1',
  WAIT_CLASS_WITH_PROVISIONER,
);
export const conflictingGenericPVC = makeGenericEphemeralPVC('test-volume', false);
export const correctGenericPVC = makeGenericEphemeralPVC('test-volume', true);
export const pvBoundGeneric = makeTestPV('pv-bound', 'node1', '1G', '1', correctGenericPVC, WAIT_CLASS);

export const pvNode1a = makeTestPV('pv-node1a', 'node1', '5G', '1', undefined, WAIT_CLASS);
export const pvNode1b = makeTestPV('pv-node1b', 'node1', '10G', '1', undefined, WAIT_CLASS);
export const pvNode1c = makeTestPV('pv-node1b', 'node1', '5G', '1', undefined, WAIT_CLASS);
export const pvNode2 = makeTestPV('pv-node2', 'node2', '1G', '1', undefined, WAIT_CLASS);
export const pvBound = makeTestPV('pv-bound', 'node1', '1G', '1', boundPVC, WAIT_CLASS);
export const pvNode1aBound = makeTestPV('pv-node1a', 'node1', '5G', '1', unboundPVC, WAIT_CLASS);
export const pvNode1bBound = makeTestPV('pv-node1b', 'node1', '10G', '1', unboundPVC2, WAIT_CLASS);
export const pvNode1bBoundHigherVersion = makeTestPV('pv-node1b', 'node1', '10G', '2', unboundPVC2, WAIT_CLASS);
export const pvBoundImmediate = makeTestPV(
  'pv-bound-immediate',
  'node1',
  '1G',
  '1',
  immediateBoundPVC,
  IMMEDIATE_CLASS,
);
export const pvBoundImmediateNode2 = makeTestPV(
  'pv-bound-immediate',
  'node2',
  '1G',
  '1',
  immediateBoundPVC,
  IMMEDIATE_CLASS,
);

export const zone1Labels = {
  'failure-domain.beta.kubernetes.io/zone': 'us-east-1',
  'failure-domain.beta.kubernetes.io/region': 'us-east-1a',
};
export const migrationPVBound = makeTestPVForCSIMigration(zone1Labels, boundMigrationPVC, true);
export const migrationPVBoundToUnbound = makeTestPVForCSIMigration(zone1Labels, unboundPVC, true);
export const nonmigrationPVBoundToUnbound = makeTestPVForCSIMigration(zone1Labels, unboundPVC, false);

export const node1 = build.makeNode('node1', { labels: { [NODE_LABEL_KEY]: 'node1' } });
export const node2 = build.makeNode('node2', { labels: { [NODE_LABEL_KEY]: 'node2' } });
export const node1NoLabels = build.makeNode('node1');
export const node1Zone1 = build.makeNode('node1', { labels: { 'topology.gke.io/zone': 'us-east-1' } });
export const node1Zone2 = build.makeNode('node1', { labels: { 'topology.gke.io/zone': 'us-east-2' } });
export const csiNode1Migrated = makeCSINode('node1', 'kubernetes.io/gce-pd');
export const csiNode1NotMigrated = makeCSINode('node1', '');

export const networkAttachedCapacity = makeCapacity('net', WAIT_CLASS_WITH_PROVISIONER, undefined, '1Gi', '');
export const node1Capacity = makeCapacity('net', WAIT_CLASS_WITH_PROVISIONER, node1, '1Gi', '');
export const node2Capacity = makeCapacity('net', WAIT_CLASS_WITH_PROVISIONER, node2, '1Gi', '');

/** A store plus a writer that behaves like the API server for PV/PVC updates (resourceVersion preconditions). */
export class TestCluster {
  readonly store = new ClusterStore();
  readonly writer: TestWriter;
  #rv = 1000;

  constructor(objects: readonly AnyObject[] = []) {
    this.writer = new TestWriter(this);
    for (const o of objects) this.add(o);
  }

  nextRV(): string {
    return String(++this.#rv);
  }

  /** Adds or replaces an object as an informer event would deliver it (a fresh resourceVersion when it already exists). */
  add(obj: AnyObject): void {
    const kind = kindOf(obj);
    const existing = this.store.get(kind, keyOf(kind, obj));
    const o =
      existing && existing.metadata.resourceVersion === obj.metadata.resourceVersion ? withRV(obj, this.nextRV()) : obj;
    this.store.upsert(kind, structuredClone(o));
  }

  remove(obj: AnyObject): void {
    this.store.delete(kindOf(obj), obj);
  }

  binder(bindTimeoutSeconds = 10): ClusterVolumeBinder {
    return new ClusterVolumeBinder({
      store: this.store,
      writer: this.writer,
      bindTimeoutSeconds,
      capacityAccounting: capacityAccountingUnderTest(),
    });
  }
}

export class TestWriter implements ClusterWriter {
  readonly #cluster: TestCluster;
  /** Names whose next update fails (as a rejected API call would). */
  readonly failUpdates = new Set<string>();
  readonly updates: string[] = [];
  /** Keys of the PVs and claims read from the source of truth. */
  readonly reads: string[] = [];
  /** Which successful updates the store (the watch) gets only at deliverHeld(): a watch behind our own writes. */
  holdBack: ((kind: Kind, obj: AnyObject) => boolean) | undefined;
  readonly #held: { kind: Kind; obj: AnyObject }[] = [];

  constructor(cluster: TestCluster) {
    this.#cluster = cluster;
  }

  async bindPod(pod: { namespace: string; name: string; uid: string }, nodeName: string): Promise<void> {
    const current = this.#cluster.store.get('Pod', `${pod.namespace}/${pod.name}`);
    if (!current) throw new WriteError(404, 'NotFound', `pods "${pod.name}" not found`);
    this.#cluster.add({ ...current, spec: { ...current.spec, nodeName } });
  }

  async nominatePod(pod: PodPrecondition, nodeName: string): Promise<void> {
    const current = this.#cluster.store.get('Pod', `${pod.namespace}/${pod.name}`);
    if (!current || current.metadata.uid !== pod.uid) {
      throw new WriteError(current ? 409 : 404, current ? 'Conflict' : 'NotFound', `pods "${pod.name}": no such pod`);
    }
    if (pod.resourceVersion && current.metadata.resourceVersion !== pod.resourceVersion)
      throw new WriteError(409, 'Conflict', `pods "${pod.name}": the object has been modified`);
    this.updates.push(`Pod/${pod.namespace}/${pod.name}`);
    this.#cluster.add({ ...current, status: { ...current.status, nominatedNodeName: nodeName } });
  }

  async updatePersistentVolume(pv: PersistentVolume): Promise<PersistentVolume> {
    return this.#update('PersistentVolume', pv.metadata.name, pv);
  }

  async updatePersistentVolumeClaim(pvc: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
    return this.#update('PersistentVolumeClaim', `${pvc.metadata.namespace}/${pvc.metadata.name}`, pvc);
  }

  unbindPersistentVolume(pv: PersistentVolume): Promise<PersistentVolume> {
    return this.updatePersistentVolume(unboundVolume(pv));
  }

  bindClaimToVolume(
    pvc: PersistentVolumeClaim,
    volumeName: string,
    annotations: Record<string, string | null>,
  ): Promise<PersistentVolumeClaim> {
    return this.updatePersistentVolumeClaim(claimBoundToVolume(pvc, volumeName, annotations));
  }

  async getPod(namespace: string, name: string): Promise<Pod | undefined> {
    return this.#cluster.store.get('Pod', `${namespace}/${name}`);
  }

  async getPersistentVolume(name: string): Promise<PersistentVolume | undefined> {
    this.reads.push(name);
    return this.#cluster.store.get('PersistentVolume', name);
  }

  async getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    this.reads.push(`${namespace}/${name}`);
    return this.#cluster.store.get('PersistentVolumeClaim', `${namespace}/${name}`);
  }

  async #update<T extends PersistentVolume | PersistentVolumeClaim>(kind: Kind, key: string, obj: T): Promise<T> {
    await Promise.resolve();
    this.updates.push(key);
    const current = this.#cluster.store.get(kind, key);
    if (!current) throw new WriteError(404, 'NotFound', `${kind} "${key}" not found`);
    if (this.failUpdates.delete(key)) throw new WriteError(500, 'InternalError', `injected failure updating "${key}"`);
    if (current.metadata.resourceVersion !== obj.metadata.resourceVersion) {
      throw new WriteError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${kind} "${key}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    const stored = withRV(obj, this.#cluster.nextRV()) as T;
    if (this.holdBack?.(kind, stored)) this.#held.push({ kind, obj: structuredClone(stored) });
    else this.#cluster.store.upsert(kind, structuredClone(stored));
    return structuredClone(stored);
  }

  get heldCount(): number {
    return this.#held.length;
  }

  /** The watch catches up: the held updates reach the store, in order. */
  deliverHeld(): void {
    for (const { kind, obj } of this.#held.splice(0)) this.#cluster.store.upsert(kind, obj);
  }
}

const KIND_BY_SHAPE = (obj: AnyObject): Kind => {
  if (obj.kind) return obj.kind;
  const o = obj as unknown as Record<string, unknown> & { spec?: Record<string, unknown> };
  if ('storageClassName' in o && !('spec' in o)) return 'CSIStorageCapacity';
  if ('provisioner' in o) return 'StorageClass';
  if (o.spec && 'containers' in o.spec) return 'Pod';
  if (o.spec && 'drivers' in o.spec) return 'CSINode';
  if (o.spec && ('storageCapacity' in o.spec || 'attachRequired' in o.spec)) return 'CSIDriver';
  if (o.spec && ('capacity' in o.spec || 'claimRef' in o.spec || 'nodeAffinity' in o.spec)) return 'PersistentVolume';
  if (o.spec && ('resources' in o.spec || 'accessModes' in o.spec || 'volumeName' in o.spec))
    return 'PersistentVolumeClaim';
  return 'Node';
};

export function kindOf(obj: AnyObject): Kind {
  return KIND_BY_SHAPE(obj);
}

function keyOf(kind: Kind, obj: AnyObject): string {
  return kind === 'Pod' || kind === 'PersistentVolumeClaim' || kind === 'CSIStorageCapacity'
    ? `${obj.metadata.namespace ?? 'default'}/${obj.metadata.name}`
    : obj.metadata.name;
}
