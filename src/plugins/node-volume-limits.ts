// NodeVolumeLimits (upstream plugins/nodevolumelimits/csi.go): the node's CSINode `allocatable.count` per driver
// against the unique volumes of the pods already there plus the pod's new ones. Unschedulable: preemption can help.
//
// Same verdicts (and errors) as upstream's walk over every pod of the node, at a fraction of its cost. (Like upstream,
// a pod already on the node, e.g. assumed, counts among the attached: its volumes are also its new ones, which are
// not counted twice, and any error its volumes raise the new pod raised first.)
// - the pod's own new volumes are resolved once per cycle, not once per node, unless an in-tree plugin's migration
//   (which the node's CSINode decides) is involved;
// - nothing is counted when none of the new volumes belongs to a driver the node limits: no count could change the
//   verdict then, and only errors remain to rule out;
// - the node's attached volumes come from the NodeInfo aggregate (`pvcRefCounts`: every claim a pod there mounts),
//   and only the few pods the aggregate cannot stand in for (generic ephemeral volumes, whose ownership is checked;
//   inline in-tree volumes; a claim without a name) are walked one by one, in pod order, so the first error is
//   upstream's first error;
// - per node, a store-fed record holds its CSINode and limits, and memoises for the cache's NodeInfo which pods need
//   a walk (until its pods change: its generation) and the attached volumes (until then, or until a PV, PVC or
//   StorageClass changes: a store-fed counter, or the CSINode is replaced). A node without CSINode has no limits:
//   it needs no record at all.
import { MutableNodeInfo, type NodeInfo } from '../cache/node-info.ts';
import { ephemeralClaimName } from '../cache/pod-usage.ts';
import type { ClusterStore } from '../cluster/store.ts';
import {
  type CSINode,
  namespaceOf,
  objectKey,
  type PersistentVolumeClaim,
  type Pod,
  type Volume,
} from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type ExplainPlugin,
  type FilterPlugin,
  type PreFilterPlugin,
  SKIP,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import { ephemeralOwnershipError } from '../volumes/claims.ts';
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

/** Reasons as upstream's plugin spells them. */
export const ERR_REASON_MAX_VOLUME_COUNT = 'node(s) exceed max volume count';

export const NODE_VOLUME_LIMITS = 'NodeVolumeLimits';
const CYCLE_KEY = 'Filter/NodeVolumeLimits';

class PVCNotFound extends Error {}

/** Set when resolving a volume consulted the node's CSINode (in-tree migration): the answer is then per node. */
interface NodeDependence {
  onNode: boolean;
}

/** getVolumeLimits: driver → attach limit, from the CSINode drivers that publish one. */
function volumeLimits(csiNode: CSINode): ReadonlyMap<string, number> {
  const limits = new Map<string, number>();
  for (const d of csiNode.spec.drivers ?? []) {
    if (d.allocatable?.count !== undefined && d.allocatable.count !== null) limits.set(d.name, d.allocatable.count);
  }
  return limits;
}

/**
 * Whether filterAttachableVolumes does more with this volume than look its claim up by name: a generic ephemeral
 * volume (ownership check, an error when it fails), a claim without a name (an error), an inline in-tree volume
 * (counted when migrated). A pod with none of them attaches exactly the claims it adds to `pvcRefCounts`.
 */
function needsOwnWalk(v: Volume): boolean {
  if (v.persistentVolumeClaim) return v.persistentVolumeClaim.claimName === '';
  return !!v.ephemeral || isInlineMigratable(v);
}

function podsToWalk(nodeInfo: NodeInfo): Pod[] {
  const out: Pod[] = [];
  for (const { pod } of nodeInfo.pods.values()) {
    if (pod.spec.volumes?.some(needsOwnWalk)) out.push(pod);
  }
  return out;
}

/** The pod's new volumes, resolved once per cycle when they do not depend on the node. */
interface CycleData {
  pod: Pod;
  /** Every node's answer when resolving the pod's claims failed (a claim is looked up by name, never per node). */
  error?: Status;
  /** The pod's new volumes; undefined when they depend on the node's CSINode. */
  volumes?: readonly NewVolume[];
}

/** A volume the pod would attach: its unique name (`driver/handle`) and its driver. */
interface NewVolume {
  unique: string;
  driver: string;
}

/** As an array: the per-node loops below read it for each of ~500 nodes, without an iterator per loop. */
function newVolumeList(volumes: ReadonlyMap<string, string>): NewVolume[] {
  return Array.from(volumes, ([unique, driver]) => ({ unique, driver }));
}

/** A node's attached volumes as upstream's walk over its pods finds them, or the error that walk returns. */
interface Attached {
  error?: string;
  /** unique name → driver */
  volumes: ReadonlyMap<string, string>;
  /** driver → how many of `volumes` */
  counts: ReadonlyMap<string, number>;
}

/**
 * Per driver the node limits: attached + new volumes (those not already attached for another pod) against the
 * limit. No allocation: a pod has a handful of volumes, so the per-driver count is a nested loop.
 */
function verdict(newVolumes: readonly NewVolume[], attached: Attached, limits: ReadonlyMap<string, number>): Status {
  for (let i = 0; i < newVolumes.length; i++) {
    const { unique, driver } = newVolumes[i];
    const limit = limits.get(driver);
    if (limit === undefined || attached.volumes.has(unique)) continue;
    let count = 0;
    for (let j = 0; j < newVolumes.length; j++) {
      const other = newVolumes[j];
      if (other.driver === driver && !attached.volumes.has(other.unique)) count++;
    }
    if ((attached.counts.get(driver) ?? 0) + count > limit) return status('Unschedulable', ERR_REASON_MAX_VOLUME_COUNT);
  }
  return SUCCESS;
}

/** What the filter needs per node, kept current by CSINode events; the memos are for one cache NodeInfo. */
interface NodeRecord {
  csiNode: CSINode;
  limits: ReadonlyMap<string, number>;
  /** The NodeInfo and generation `walk` and `attached` were computed for. */
  info?: NodeInfo;
  generation: number;
  walk: Pod[];
  attached?: Attached;
  volumesGeneration: number;
}

export class NodeVolumeLimitsPlugin implements PreFilterPlugin, FilterPlugin, ExplainPlugin {
  readonly name = NODE_VOLUME_LIMITS;
  readonly #store: ClusterStore;
  /** Stands in for upstream's random prefix: unbound claims counted by class never collide with real handles. */
  readonly #unboundPrefix = `unbound-${Math.random().toString(36).slice(2, 10)}`;
  /** Bumped on every PV, PVC and StorageClass change: what a node's attached volumes are resolved from. */
  #volumesGeneration = 0;
  /** Node name → its CSINode record; nodes without a CSINode have no limits. */
  readonly #nodes = new Map<string, NodeRecord>();
  /**
   * The same records by NodeInfo.ordinal, filled as nodes are filtered (null: the node has no CSINode): an array
   * read instead of a map lookup by name per node. Emptied on every CSINode change (rare).
   */
  #byOrdinal: ({ name: string; record: NodeRecord | undefined } | undefined)[] = [];
  readonly #unsubscribe: (() => void)[] = [];

  constructor(store: ClusterStore) {
    this.#store = store;
    const bump = () => {
      this.#volumesGeneration++;
    };
    for (const c of store.list('CSINode')) this.#setCSINode(c);
    this.#unsubscribe.push(
      store.on('PersistentVolume', bump),
      store.on('PersistentVolumeClaim', bump),
      store.on('StorageClass', bump),
      store.on('CSINode', (e) => {
        if (e.type === 'delete') this.#nodes.delete(e.obj.metadata.name);
        else this.#setCSINode(e.obj);
        this.#byOrdinal = [];
      }),
    );
  }

  /** Stops following the store (the scheduling state closes it on shutdown). */
  close(): void {
    for (const off of this.#unsubscribe.splice(0)) off();
  }

  #setCSINode(csiNode: CSINode): void {
    // A new record drops the memos: what they resolved may depend on the CSINode (migrated plugins).
    this.#nodes.set(csiNode.metadata.name, {
      csiNode,
      limits: volumeLimits(csiNode),
      generation: -1,
      walk: [],
      volumesGeneration: -1,
    });
  }

  preFilter(_state: CycleState, pod: Pod): Status {
    for (const v of pod.spec.volumes ?? []) {
      if (v.persistentVolumeClaim || v.ephemeral || isInlineMigratable(v)) return SUCCESS;
    }
    return SKIP;
  }

  filter(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    if ((pod.spec.volumes ?? []).length === 0) return SUCCESS;
    let cycle = state.read<CycleData>(CYCLE_KEY);
    if (cycle?.pod !== pod) {
      cycle = this.#resolveNewVolumes(pod);
      state.write(CYCLE_KEY, cycle);
    }
    if (cycle.error) return cycle.error;
    // Resolved without the node and none new: the predicate is always true (skips the per-node lookup).
    if (cycle.volumes?.length === 0) return SUCCESS;
    const node = this.#record(nodeInfo);
    // If the node doesn't have volume limits (no CSINode), the predicate is always true.
    if (!node) return SUCCESS;
    const csiNode = node.csiNode;
    let newVolumes = cycle.volumes;
    if (!newVolumes) {
      const own = new Map<string, string>();
      try {
        this.#attachableVolumes(pod, csiNode, true, own);
      } catch (err) {
        return status('Error', (err as Error).message); // not reached: errors do not depend on the node
      }
      newVolumes = newVolumeList(own);
    }
    // If the pod doesn't have any new CSI volumes, or the node no limits, the predicate is always true.
    if (newVolumes.length === 0) return SUCCESS;
    const limits = node.limits;
    if (limits.size === 0) return SUCCESS;
    let limited = false;
    for (let i = 0; i < newVolumes.length && !limited; i++) limited = limits.has(newVolumes[i].driver);
    if (node.info !== nodeInfo || node.generation !== nodeInfo.generation) {
      // Another NodeInfo (a what-if copy, a test's) or its pods changed: recompute, and memoise cache NodeInfos only.
      const walk = podsToWalk(nodeInfo);
      if (!(nodeInfo instanceof MutableNodeInfo)) {
        return this.#slow(nodeInfo, csiNode, walk, limited, newVolumes, limits);
      }
      node.info = nodeInfo;
      node.generation = nodeInfo.generation;
      node.walk = walk;
      node.attached = undefined;
    }
    if (!limited && node.walk.length === 0) return SUCCESS; // no count matters and nothing can fail
    if (!node.attached || node.volumesGeneration !== this.#volumesGeneration) {
      node.attached = this.#computeAttached(nodeInfo, csiNode, node.walk);
      node.volumesGeneration = this.#volumesGeneration;
    }
    if (node.attached.error !== undefined) return status('Error', node.attached.error);
    return limited ? verdict(newVolumes, node.attached, limits) : SUCCESS;
  }

  /** The node's CSINode record, through the ordinal when the NodeInfo has one. */
  #record(nodeInfo: NodeInfo): NodeRecord | undefined {
    const ordinal = nodeInfo.ordinal ?? -1;
    if (ordinal < 0) return this.#nodes.get(nodeInfo.name);
    const slot = this.#byOrdinal[ordinal];
    if (slot?.name === nodeInfo.name) return slot.record;
    const record = this.#nodes.get(nodeInfo.name);
    this.#byOrdinal[ordinal] = { name: nodeInfo.name, record };
    return record;
  }

  /** Without memos: a NodeInfo that is not the cache's (a test's, a what-if copy from elsewhere). */
  #slow(
    nodeInfo: NodeInfo,
    csiNode: CSINode,
    walk: readonly Pod[],
    limited: boolean,
    newVolumes: readonly NewVolume[],
    limits: ReadonlyMap<string, number>,
  ): Status {
    if (!limited && walk.length === 0) return SUCCESS;
    const attached = this.#computeAttached(nodeInfo, csiNode, walk);
    if (attached.error !== undefined) return status('Error', attached.error);
    return limited ? verdict(newVolumes, attached, limits) : SUCCESS;
  }

  /**
   * Per driver the node limits and the pod adds a volume to: the limit, the unique volumes attached, how many the pod
   * adds, and the pods on the node holding the attached ones (`namespace/name`).
   */
  explain(_state: CycleState, pod: Pod, nodeInfo: NodeInfo): object | undefined {
    const node = this.#nodes.get(nodeInfo.name);
    if (!node || node.limits.size === 0) return undefined;
    const newVolumes = new Map<string, string>();
    try {
      this.#attachableVolumes(pod, node.csiNode, true, newVolumes);
    } catch {
      return undefined; // the verdict already carries the error
    }
    const attached = this.#computeAttached(nodeInfo, node.csiNode, podsToWalk(nodeInfo));
    const attachLimits = [];
    for (const driver of new Set(newVolumes.values())) {
      const limit = node.limits.get(driver);
      if (limit === undefined) continue;
      let adding = 0;
      for (const [unique, d] of newVolumes) if (d === driver && !attached.volumes.has(unique)) adding++;
      const heldBy: string[] = [];
      for (const { pod: other } of nodeInfo.pods.values()) {
        if (other.metadata.uid === pod.metadata.uid) continue;
        const own = new Map<string, string>();
        try {
          this.#attachableVolumes(other, node.csiNode, false, own);
        } catch {
          continue;
        }
        if ([...own.values()].includes(driver)) heldBy.push(objectKey('Pod', other));
      }
      attachLimits.push({ driver, limit, attached: attached.counts.get(driver) ?? 0, adding, heldBy });
    }
    return attachLimits.length > 0 ? { attachLimits } : undefined;
  }

  /** The pod's new volumes, or the error every node answers; per node only when in-tree migration is involved. */
  #resolveNewVolumes(pod: Pod): CycleData {
    const dependence: NodeDependence = { onNode: false };
    const volumes = new Map<string, string>();
    try {
      this.#attachableVolumes(pod, undefined, true, volumes, dependence);
    } catch (err) {
      if (err instanceof PVCNotFound) return { pod, error: status('UnschedulableAndUnresolvable', err.message) };
      return { pod, error: status('Error', (err as Error).message) };
    }
    return dependence.onNode ? { pod } : { pod, volumes: newVolumeList(volumes) };
  }

  #computeAttached(nodeInfo: NodeInfo, csiNode: CSINode | undefined, walk: readonly Pod[]): Attached {
    const volumes = new Map<string, string>();
    try {
      // In pod order, so the error is the one upstream would return first; only these pods can fail.
      for (const existing of walk) this.#attachableVolumes(existing, csiNode, false, volumes);
    } catch (err) {
      return { error: (err as Error).message, volumes, counts: new Map() };
    }
    for (const key of nodeInfo.pvcRefCounts.keys()) {
      // `namespace/name`; a claim without a name belongs to a walked pod, which failed above.
      const pvc = key.endsWith('/') ? undefined : this.#store.get('PersistentVolumeClaim', key);
      if (!pvc) continue; // an existing pod's missing claim is not counted
      const info = this.#csiDriverInfo(csiNode, pvc);
      if (info) volumes.set(`${info.driver}/${info.handle}`, info.driver);
    }
    const counts = new Map<string, number>();
    for (const driver of volumes.values()) counts.set(driver, (counts.get(driver) ?? 0) + 1);
    return { volumes, counts };
  }

  /** filterAttachableVolumes: unique volume name (`driver/handle`) → driver, for the pod's attachable volumes. */
  #attachableVolumes(
    pod: Pod,
    csiNode: CSINode | undefined,
    newPod: boolean,
    result: Map<string, string>,
    dependence?: NodeDependence,
  ): void {
    const namespace = namespaceOf(pod);
    for (const v of pod.spec.volumes ?? []) {
      let claimName: string;
      let ephemeral = false;
      if (v.persistentVolumeClaim) {
        claimName = v.persistentVolumeClaim.claimName;
      } else if (v.ephemeral) {
        claimName = ephemeralClaimName(pod, v.name);
        ephemeral = true;
      } else {
        if (dependence && isInlineMigratable(v)) dependence.onNode = true;
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
      const info = this.#csiDriverInfo(csiNode, pvc, dependence);
      if (!info) continue;
      result.set(`${info.driver}/${info.handle}`, info.driver);
    }
  }

  /** getCSIDriverInfo: from the bound PV (translated when migrated), else from the claim's class. */
  #csiDriverInfo(
    csiNode: CSINode | undefined,
    pvc: PersistentVolumeClaim,
    dependence?: NodeDependence,
  ): { driver: string; handle: string } | undefined {
    const pvName = pvc.spec.volumeName ?? '';
    const pv = pvName === '' ? undefined : this.#store.get('PersistentVolume', pvName);
    if (!pv) return this.#csiDriverInfoFromClass(csiNode, pvc, dependence);
    let csi = pv.spec.csi;
    if (!csi) {
      const plugin = inTreePluginOfPV(pv);
      if (!plugin) return undefined;
      if (dependence) dependence.onNode = true;
      if (!isMigratedOnNode(plugin, csiNode)) return undefined;
      csi = translateInTreePVToCSI(pv)?.spec.csi;
      if (!csi) return undefined;
    }
    if (!csi.driver || !csi.volumeHandle) return undefined;
    return { driver: csi.driver, handle: csi.volumeHandle };
  }

  #csiDriverInfoFromClass(
    csiNode: CSINode | undefined,
    pvc: PersistentVolumeClaim,
    dependence?: NodeDependence,
  ): { driver: string; handle: string } | undefined {
    const scName = claimClass(pvc);
    // No class: immediate binding, so the claim must be bound before scheduling; not counted.
    if (scName === '') return undefined;
    const sc = this.#store.get('StorageClass', scName);
    if (!sc) return undefined;
    let driver = sc.provisioner;
    if (isMigratableProvisioner(driver)) {
      if (dependence) dependence.onNode = true;
      if (!isMigratedOnNode(driver, csiNode)) return undefined;
      const translated = csiDriverForInTreePlugin(driver);
      if (!translated) return undefined;
      driver = translated;
    }
    return { driver, handle: `${this.#unboundPrefix}-${pvc.metadata.namespace}/${pvc.metadata.name}` };
  }
}
