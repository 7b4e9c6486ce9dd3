// Whether a node can provision the claims no static PV satisfies (binder.go checkVolumeProvisions and
// hasEnoughCapacity): the class must provision, allow the node's topology and, for CSI drivers that publish
// storage capacity, some CSIStorageCapacity reachable from the node must fit the request.

import { selectorMatchesSafely } from '../cluster/label-selector.ts';
import { parseValue } from '../cluster/quantity.ts';
import type { CSIDriver, CSIStorageCapacity, PersistentVolumeClaim, StorageClass } from '../cluster/types.ts';
import { NOT_SUPPORTED_PROVISIONER } from './constants.ts';
import { matchTopologySelectorTerms } from './node-affinity.ts';
import { claimClass, claimKey, claimMatchInput, ignore } from './pv-matching.ts';

export interface DynamicProvision {
  pvc: PersistentVolumeClaim;
  /** The capacity object that admitted the claim; undefined when no capacity check applied. */
  nodeCapacity?: CSIStorageCapacity;
}

export interface ProvisioningSources {
  storageClass(name: string): StorageClass | undefined;
  csiDriver(name: string): CSIDriver | undefined;
  /**
   * The first CSIStorageCapacity of a class, in the order a scan of the class would see them, that `accept` takes
   * among those whose nodeTopology could match the node's labels (see CapacityIndex).
   */
  findCapacity(
    className: string,
    nodeLabels: Readonly<Record<string, string>> | undefined,
    accept: (capacity: CSIStorageCapacity) => boolean,
  ): CSIStorageCapacity | undefined;
}

export class ProvisioningError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProvisioningError';
  }
}

export interface ProvisionCheck {
  satisfied: boolean;
  sufficientStorage: boolean;
  provisions: DynamicProvision[];
}

const limitOf = new WeakMap<CSIStorageCapacity, number | null>();

/** maximumVolumeSize when set (more precise), else capacity, in bytes; null for neither. Memoised per object. */
function capacityLimit(capacity: CSIStorageCapacity): number | null {
  let limit = limitOf.get(capacity);
  if (limit === undefined) {
    const q = capacity.maximumVolumeSize ?? capacity.capacity;
    limit = q === undefined ? null : parseValue(q);
    limitOf.set(capacity, limit);
  }
  return limit;
}

/** capacitySufficient: maximumVolumeSize when set (more precise), else capacity; neither → not sufficient. */
export function capacitySufficient(capacity: CSIStorageCapacity, sizeInBytes: number): boolean {
  const limit = capacityLimit(capacity);
  return limit !== null && limit >= sizeInBytes;
}

/** nodeHasAccess: a nil nodeTopology reaches no node; `{}` reaches all. */
export function nodeHasAccess(
  nodeLabels: Readonly<Record<string, string>> | undefined,
  capacity: CSIStorageCapacity,
): boolean {
  if (!capacity.nodeTopology) return false;
  return selectorMatchesSafely(capacity.nodeTopology, nodeLabels);
}

/** hasEnoughCapacity: `{ ok, capacity }` with the admitting capacity object when a check applied. */
export function hasEnoughCapacity(
  provisioner: string,
  pvc: PersistentVolumeClaim,
  sc: StorageClass,
  nodeLabels: Readonly<Record<string, string>> | undefined,
  sources: ProvisioningSources,
  taken?: ReadonlyMap<CSIStorageCapacity, number>,
): { ok: boolean; capacity?: CSIStorageCapacity } {
  const request = pvc.spec.resources?.requests?.storage;
  if (request === undefined) return { ok: true };
  const driver = sources.csiDriver(provisioner);
  // Not a CSI driver, or one that does not publish capacity: nothing to check.
  if (driver?.spec.storageCapacity !== true) return { ok: true };
  const size = claimMatchInput(pvc).request; // the request parsed once per claim object
  const capacity = sources.findCapacity(
    sc.metadata.name,
    nodeLabels,
    (c) => capacitySufficient(c, size + (taken?.get(c) ?? 0)) && nodeHasAccess(nodeLabels, c),
  );
  return capacity ? { ok: true, capacity } : { ok: false };
}

/** How the provisioning check judged one claim on a node (explain's detail). */
export interface ProvisionVerdict {
  pvc: PersistentVolumeClaim;
  storageClass: StorageClass;
  verdict: 'NoProvisioner' | 'AllowedTopologiesMismatch' | 'InsufficientCapacity' | 'Provisionable';
  /** The capacity object that admitted the claim, when a capacity check applied and passed. */
  capacity?: CSIStorageCapacity;
}

/**
 * checkVolumeProvisions: the first failing claim decides; class problems are errors, not reasons. `taken`: bytes
 * that claims of nominated pods would provision from a capacity object (not free for this pod). `note`, when given,
 * hears the verdict on each claim judged.
 */
export function checkVolumeProvisions(
  claims: readonly PersistentVolumeClaim[],
  nodeLabels: Readonly<Record<string, string>> | undefined,
  sources: ProvisioningSources,
  taken?: ReadonlyMap<CSIStorageCapacity, number>,
  note: (verdict: ProvisionVerdict) => void = ignore,
): ProvisionCheck {
  const provisions: DynamicProvision[] = [];
  for (const pvc of claims) {
    const className = claimClass(pvc);
    if (className === '') throw new ProvisioningError(`no class for claim "${claimKey(pvc)}"`);
    const sc = sources.storageClass(className);
    if (!sc) throw new ProvisioningError(`failed to find storage class "${className}"`);
    const provisioner = sc.provisioner ?? '';
    if (provisioner === '' || provisioner === NOT_SUPPORTED_PROVISIONER) {
      note({ pvc, storageClass: sc, verdict: 'NoProvisioner' });
      return { satisfied: false, sufficientStorage: true, provisions: [] };
    }
    if (!matchTopologySelectorTerms(sc.allowedTopologies, nodeLabels)) {
      note({ pvc, storageClass: sc, verdict: 'AllowedTopologiesMismatch' });
      return { satisfied: false, sufficientStorage: true, provisions: [] };
    }
    const { ok, capacity } = hasEnoughCapacity(provisioner, pvc, sc, nodeLabels, sources, taken);
    if (!ok) {
      note({ pvc, storageClass: sc, verdict: 'InsufficientCapacity' });
      return { satisfied: true, sufficientStorage: false, provisions: [] };
    }
    note(
      capacity
        ? { pvc, storageClass: sc, verdict: 'Provisionable', capacity }
        : { pvc, storageClass: sc, verdict: 'Provisionable' },
    );
    provisions.push(capacity ? { pvc, nodeCapacity: capacity } : { pvc });
  }
  return { satisfied: true, sufficientStorage: true, provisions };
}
