// NodeVolumeLimits (upstream plugins/nodevolumelimits/csi.go): the node's CSINode `allocatable.count` per driver
// against the unique volumes of the pods already there plus the pod's new ones. Unschedulable: preemption can help.
import type { NodeInfo } from '../cache/node-info.ts';
import type { ClusterStore } from '../cluster/store.ts';
import type { CSINode, PersistentVolumeClaim, Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type FilterPlugin,
  type PreFilterPlugin,
  SKIP,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import { ephemeralClaimName, ephemeralOwnershipError } from '../volumes/claims.ts';
import { ERR_REASON_MAX_VOLUME_COUNT } from '../volumes/constants.ts';
import {
  csiDriverForInTreePlugin,
  inlineVolumeAsCSI,
  inTreePluginOfPV,
  isInlineMigratable,
  isMigratableProvisioner,
  isMigratedOnNode,
  translateInTreePVToCSI,
} from '../volumes/csi-migration.ts';
import { claimClass } from '../volumes/pv-matching.ts';

export const NODE_VOLUME_LIMITS = 'NodeVolumeLimits';

class PVCNotFound extends Error {}

/** getVolumeLimits: driver → attach limit, from the CSINode drivers that publish one. */
function volumeLimits(csiNode: CSINode | undefined): Map<string, number> {
  const limits = new Map<string, number>();
  for (const d of csiNode?.spec.drivers ?? []) {
    if (d.allocatable?.count !== undefined && d.allocatable.count !== null) limits.set(d.name, d.allocatable.count);
  }
  return limits;
}

export class NodeVolumeLimitsPlugin implements PreFilterPlugin, FilterPlugin {
  readonly name = NODE_VOLUME_LIMITS;
  readonly #store: ClusterStore;
  /** Stands in for upstream's random prefix: unbound claims counted by class never collide with real handles. */
  readonly #unboundPrefix = `unbound-${Math.random().toString(36).slice(2, 10)}`;

  constructor(store: ClusterStore) {
    this.#store = store;
  }

  preFilter(_state: CycleState, pod: Pod): Status {
    for (const v of pod.spec.volumes ?? []) {
      if (v.persistentVolumeClaim || v.ephemeral || isInlineMigratable(v)) return SUCCESS;
    }
    return SKIP;
  }

  filter(_state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    if ((pod.spec.volumes ?? []).length === 0) return SUCCESS;
    const csiNode = this.#store.get('CSINode', nodeInfo.name);
    const newVolumes = new Map<string, string>();
    try {
      this.#attachableVolumes(pod, csiNode, true, newVolumes);
    } catch (err) {
      if (err instanceof PVCNotFound) return status('UnschedulableAndUnresolvable', err.message);
      return status('Error', (err as Error).message);
    }
    if (newVolumes.size === 0) return SUCCESS;
    const limits = volumeLimits(csiNode);
    if (limits.size === 0) return SUCCESS;
    const attached = new Map<string, string>();
    for (const { pod: existing } of nodeInfo.pods.values()) {
      if (existing.metadata.uid === pod.metadata.uid) continue;
      try {
        this.#attachableVolumes(existing, csiNode, false, attached);
      } catch (err) {
        return status('Error', (err as Error).message);
      }
    }
    const attachedCount = new Map<string, number>();
    for (const [unique, driver] of attached) {
      newVolumes.delete(unique); // a volume already attached for another pod is not counted twice
      attachedCount.set(driver, (attachedCount.get(driver) ?? 0) + 1);
    }
    const newCount = new Map<string, number>();
    for (const driver of newVolumes.values()) newCount.set(driver, (newCount.get(driver) ?? 0) + 1);
    for (const [driver, count] of newCount) {
      const limit = limits.get(driver);
      if (limit !== undefined && (attachedCount.get(driver) ?? 0) + count > limit) {
        return status('Unschedulable', ERR_REASON_MAX_VOLUME_COUNT);
      }
    }
    return SUCCESS;
  }

  /** filterAttachableVolumes: unique volume name (`driver/handle`) → driver, for the pod's attachable volumes. */
  #attachableVolumes(pod: Pod, csiNode: CSINode | undefined, newPod: boolean, result: Map<string, string>): void {
    const namespace = pod.metadata.namespace ?? 'default';
    for (const v of pod.spec.volumes ?? []) {
      let claimName: string;
      let ephemeral = false;
      if (v.persistentVolumeClaim) {
        claimName = v.persistentVolumeClaim.claimName;
      } else if (v.ephemeral) {
        claimName = ephemeralClaimName(pod, v);
        ephemeral = true;
      } else {
        const inline = inlineVolumeAsCSI(v, csiNode);
        if (inline) result.set(`${inline.driver}/${inline.handle}`, inline.driver);
        continue;
      }
      if (claimName === '') throw new Error('PersistentVolumeClaim had no name');
      const pvc = this.#store.get('PersistentVolumeClaim', `${namespace}/${claimName}`);
      if (!pvc) {
        // A new pod cannot run without its claim; an existing pod's missing claim is simply not counted.
        if (newPod) {
          throw new PVCNotFound(
            `looking up PVC ${namespace}/${claimName}: persistentvolumeclaim "${claimName}" not found`,
          );
        }
        continue;
      }
      if (ephemeral) {
        const err = ephemeralOwnershipError(pod, pvc);
        if (err) throw new Error(err);
      }
      const info = this.#csiDriverInfo(csiNode, pvc);
      if (!info) continue;
      result.set(`${info.driver}/${info.handle}`, info.driver);
    }
  }

  /** getCSIDriverInfo: from the bound PV (translated when migrated), else from the claim's class. */
  #csiDriverInfo(
    csiNode: CSINode | undefined,
    pvc: PersistentVolumeClaim,
  ): { driver: string; handle: string } | undefined {
    const pvName = pvc.spec.volumeName ?? '';
    const pv = pvName === '' ? undefined : this.#store.get('PersistentVolume', pvName);
    if (!pv) return this.#csiDriverInfoFromClass(csiNode, pvc);
    let csi = pv.spec.csi;
    if (!csi) {
      const plugin = inTreePluginOfPV(pv);
      if (!plugin || !isMigratedOnNode(plugin, csiNode)) return undefined;
      csi = translateInTreePVToCSI(pv)?.spec.csi;
      if (!csi) return undefined;
    }
    if (!csi.driver || !csi.volumeHandle) return undefined;
    return { driver: csi.driver, handle: csi.volumeHandle };
  }

  #csiDriverInfoFromClass(
    csiNode: CSINode | undefined,
    pvc: PersistentVolumeClaim,
  ): { driver: string; handle: string } | undefined {
    const scName = claimClass(pvc);
    // No class: immediate binding, so the claim must be bound before scheduling; not counted.
    if (scName === '') return undefined;
    const sc = this.#store.get('StorageClass', scName);
    if (!sc) return undefined;
    let driver = sc.provisioner;
    if (isMigratableProvisioner(driver)) {
      if (!isMigratedOnNode(driver, csiNode)) return undefined;
      const translated = csiDriverForInTreePlugin(driver);
      if (!translated) return undefined;
      driver = translated;
    }
    return { driver, handle: `${this.#unboundPrefix}-${pvc.metadata.namespace}/${pvc.metadata.name}` };
  }
}
