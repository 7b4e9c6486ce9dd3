// What an external CSI provisioner does for a claim the scheduler annotated with a selected node: pick the topology
// segment the node is in, create the PV there, and (our stand-in for the driver) use up the segment's capacity.

import { selectorMatchesSafely } from '../label-selector.ts';
import { parseQuantity } from '../quantity.ts';
import {
  type CSIStorageCapacity,
  type Node,
  type NodeSelectorRequirement,
  objectKey,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type StorageClass,
} from '../types.ts';
import { ANN_SELECTED_NODE, claimClass, hasProvisioner, volumeModeOf } from '../volume-annotations.ts';
import { LABEL_HOSTNAME } from '../well-known-labels.ts';
import { claimReference } from './bind.ts';
import { formatBytes } from './format.ts';
import { selectorRequirements } from './labels.ts';
import { synthesizeUid } from './normalize.ts';
import type { ClusterState } from './state.ts';

/** What provisioning reads: the cluster-state file's state, or any view with its `get` and `list` (simulate's private store). */
export type ProvisioningView = Pick<ClusterState, 'get' | 'list'>;

const ANN_PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';

export type ProvisionPlan =
  | { action: 'none'; why: string }
  | { action: 'reschedule'; why: string }
  | { action: 'create'; pv: PersistentVolume; capacity?: CSIStorageCapacity };

export function provisionedVolumeName(claim: PersistentVolumeClaim): string {
  return `pvc-${claim.metadata.uid}`;
}

/** The limit the scheduler checks against: maximumVolumeSize when set, else capacity; none → admits nothing. */
function limit(capacity: CSIStorageCapacity): number | undefined {
  const value = capacity.maximumVolumeSize ?? capacity.capacity;
  return value === undefined ? undefined : parseQuantity(value);
}

/** Capacity objects of the class whose topology contains the node, in a stable order. */
function capacitiesFor(state: ProvisioningView, className: string, node: Node): CSIStorageCapacity[] {
  return state
    .list('CSIStorageCapacity')
    .filter(
      (c) =>
        c.storageClassName === className &&
        c.nodeTopology &&
        selectorMatchesSafely(c.nodeTopology, node.metadata.labels),
    )
    .sort((a, b) => objectKey('CSIStorageCapacity', a).localeCompare(objectKey('CSIStorageCapacity', b)));
}

/**
 * The volume's accessible topology: the admitting capacity's segment, else the driver's topology keys on the node
 * (CSINode), else the node's hostname label (which need not equal the node name).
 */
function topology(
  state: ProvisioningView,
  node: Node,
  driver: string,
  capacity?: CSIStorageCapacity,
): NodeSelectorRequirement[] {
  const fromCapacity = capacity?.nodeTopology ? selectorRequirements(capacity.nodeTopology) : [];
  if (fromCapacity.length > 0) return fromCapacity;
  const labels = node.metadata.labels ?? {};
  const keys =
    state.get('CSINode', node.metadata.name)?.spec.drivers?.find((d) => d.name === driver)?.topologyKeys ?? [];
  const fromDriver = keys
    .filter((k) => Object.hasOwn(labels, k))
    .map((k) => ({ key: k, operator: 'In', values: [labels[k]] }));
  if (fromDriver.length > 0) return fromDriver;
  return [{ key: LABEL_HOSTNAME, operator: 'In', values: [labels[LABEL_HOSTNAME] ?? node.metadata.name] }];
}

function volumeFor(
  claim: PersistentVolumeClaim,
  sc: StorageClass,
  size: string | number,
  affinity: NodeSelectorRequirement[],
): PersistentVolume {
  const name = provisionedVolumeName(claim);
  return {
    metadata: {
      name,
      uid: synthesizeUid('PersistentVolume', undefined, name),
      resourceVersion: '',
      annotations: { [ANN_PROVISIONED_BY]: sc.provisioner },
    },
    spec: {
      capacity: { storage: size },
      accessModes: [...(claim.spec.accessModes ?? ['ReadWriteOnce'])],
      claimRef: claimReference(claim),
      persistentVolumeReclaimPolicy: sc.reclaimPolicy ?? 'Delete',
      storageClassName: sc.metadata.name,
      volumeMode: volumeModeOf(claim),
      csi: { driver: sc.provisioner, volumeHandle: name },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: affinity }] } },
    },
    status: { phase: 'Bound' },
  };
}

/** The capacity left after a volume of `bytes` is carved out of it; maximumVolumeSize never exceeds what is left. */
export function consumeCapacity(capacity: CSIStorageCapacity, bytes: number): CSIStorageCapacity {
  const left = Math.max(0, parseQuantity(capacity.capacity ?? 0) - bytes);
  const out: CSIStorageCapacity = { ...capacity, capacity: formatBytes(left) };
  if (capacity.maximumVolumeSize !== undefined && parseQuantity(capacity.maximumVolumeSize) > left) {
    out.maximumVolumeSize = formatBytes(left);
  }
  return out;
}

/** Decides what provisioning a claim needs, reading the current state only. */
export function planProvisioning(state: ProvisioningView, claim: PersistentVolumeClaim): ProvisionPlan {
  const nodeName = claim.metadata.annotations?.[ANN_SELECTED_NODE];
  if (!nodeName || claim.spec.volumeName) return { action: 'none', why: 'not waiting for provisioning' };
  const className = claimClass(claim);
  const sc = className ? state.get('StorageClass', className) : undefined;
  if (!sc || !hasProvisioner(sc)) {
    return { action: 'none', why: `storage class "${className}" has no provisioner` };
  }
  if (state.get('PersistentVolume', provisionedVolumeName(claim)))
    return { action: 'none', why: 'already provisioned' };
  const size = claim.spec.resources?.requests?.storage;
  if (size === undefined) return { action: 'reschedule', why: 'the claim requests no storage size' };
  const node = state.get('Node', nodeName);
  if (!node) return { action: 'reschedule', why: `selected node "${nodeName}" not found` };
  const bytes = parseQuantity(size);
  const tracked = state.get('CSIDriver', sc.provisioner)?.spec.storageCapacity === true;
  const candidates = capacitiesFor(state, className, node);
  const admitting = candidates.find((c) => (limit(c) ?? -1) >= bytes);
  if (tracked && !admitting) {
    return {
      action: 'reschedule',
      why: `no CSIStorageCapacity for class "${className}" on node "${nodeName}" has room for ${size}`,
    };
  }
  const pv = volumeFor(claim, sc, size, topology(state, node, sc.provisioner, admitting ?? candidates[0]));
  return tracked && admitting
    ? { action: 'create', pv, capacity: consumeCapacity(admitting, bytes) }
    : { action: 'create', pv };
}
