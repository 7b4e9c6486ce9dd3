// The scheduler volume binder's interface (upstream volumebinding/binder.go, SchedulerVolumeBinder): what the
// VolumeBinding plugin, the extender's bind and the operations views ask of it, and the types they exchange.
// ClusterVolumeBinder (volume-binder.ts) implements it over the store and the API; FakeVolumeBinder
// (fake-binder.ts) answers from fixed results, for tests, as upstream's fake_binder.go.
import type { CSIStorageCapacity, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../cluster/types.ts';
import type { PVAssumeCache, PVCAssumeCache } from './assume-cache.ts';
import type { PodVolumeClaims } from './claims.ts';
import type { ClaimExplanation } from './explain.ts';
import type { InFlightProvisions } from './in-flight.ts';
import type { CapacityAccountingMode, DynamicProvision, ProvisionVerdict } from './provisioning.ts';
import type { PVRefusal } from './pv-matching.ts';

/** FindPodVolumes conflict reasons (volumebinding/binder.go), in the order they are reported. */
export const ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity";
export const ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind";
export const ERR_REASON_NOT_ENOUGH_SPACE = 'node(s) did not have enough free storage';
export const ERR_REASON_PV_NOT_EXIST = 'node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)';

export interface BindingInfo {
  pvc: PersistentVolumeClaim;
  pv: PersistentVolume;
}

export interface PodVolumes {
  staticBindings: BindingInfo[];
  dynamicProvisions: DynamicProvision[];
}

/**
 * What pods nominated to the node (of at least the pod's priority) would take there: their chosen PVs are not
 * offered, the storage they would provision is no longer free in the capacity object that admitted it.
 */
export interface HeldVolumes {
  pvs: ReadonlySet<string>;
  /** capacity object → bytes its nominated claims would take */
  capacity: ReadonlyMap<CSIStorageCapacity, number>;
}

export interface FindResult {
  podVolumes: PodVolumes;
  /** Conflict reasons in upstream order; empty when the node fits. */
  reasons: string[];
  /** Rejected for storage only because of joint accounting: upstream's per-claim check would have admitted it. */
  jointOnly?: boolean;
}

/**
 * How findPodVolumes decides on one node. Read during the call only: the filter reuses one object across nodes, so
 * that its per-node loop allocates none.
 */
export interface FindOptions {
  /** What nominated pods hold on the node. */
  held?: HeldVolumes;
  /** The node's NodeInfo.ordinal, when known: free PVs and capacities are then read from the node's dense rows. */
  ordinal?: number;
  /** Told each decision (explain's detail); the rows are then not read. */
  explain?: FindExplainer;
}

/**
 * Told what findPodVolumes decides for each claim on one node, in the order it decides (explain's detail). The filter
 * passes none; with one, static matching also says why each PV that could be on the node was passed over.
 */
export interface FindExplainer {
  /** A bound claim: its PV (undefined when missing) and whether the PV's node affinity holds on the node. */
  bound(pvc: PersistentVolumeClaim, pv: PersistentVolume | undefined, affinityMatches: boolean): void;
  /** An unbound claim whose provisioning already started for `selectedNode`. */
  selectedNode(pvc: PersistentVolumeClaim, selectedNode: string): void;
  /**
   * Static matching of one claim: the PV chosen (the filter's choice), the PVs that could be on the node passed over,
   * and how many PVs of the class have node affinity for other nodes only (not examined one by one).
   */
  matched(
    pvc: PersistentVolumeClaim,
    chosen: PersistentVolume | undefined,
    refused: [PersistentVolume, PVRefusal][],
    onOtherNodes: number,
  ): void;
  /** The provisioning check's verdict on one claim. */
  provision(verdict: ProvisionVerdict): void;
}

/** An internal failure while deciding: an error status, never a reason. */
export class BinderError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'BinderError';
  }
}

/**
 * SchedulerVolumeBinder: decide (find), assume and revert, bind, in upstream's names; plus what this extender reads
 * beside them (the assume caches and in-flight provisions for ops and metrics, a generation for cached decisions).
 */
export interface VolumeBinder {
  /** Bumped whenever anything a decision reads changes: cached decisions compare it. */
  generation(): number;
  readonly bindTimeoutSeconds: number;
  readonly capacityAccounting: CapacityAccountingMode;
  /** The assume caches: the API's objects with this process's assumptions over them. */
  readonly pvCache: PVAssumeCache;
  readonly pvcCache: PVCAssumeCache;
  /** Provisions the capacity objects do not show yet. */
  readonly inFlight: InFlightProvisions;
  /** Nodes rejected for storage only because of joint accounting (filter verdicts), for the metrics. */
  jointOnlyRejections: number;

  node(name: string): Node | undefined;
  /** A claim of the namespace, as the PVC assume cache holds it (assumptions included). */
  claim(namespace: string | undefined, name: string): PersistentVolumeClaim | undefined;
  /** podHasPVCs' verdict: the reason no node can host the pod's claims, if any. */
  podClaimsError(pod: Pod): string | undefined;
  /** GetPodVolumeClaims. Throws ClaimError. */
  getPodVolumeClaims(pod: Pod): PodVolumeClaims;
  /** FindPodVolumes for one node. Throws BinderError for internal errors (never for a verdict). */
  findPodVolumes(pod: Pod, claims: PodVolumeClaims, node: Node, options?: FindOptions): FindResult;
  /** findPodVolumes with an explainer: per claim, its PV or the PVs considered and why refused, and provisioning. */
  explainPodVolumes(
    pod: Pod,
    claims: PodVolumeClaims,
    node: Node,
    options: { held?: HeldVolumes; maxVolumes: number },
  ): ClaimExplanation[];
  /** AssumePodVolumes, in the caches only; allBound when there is nothing to do. Throws; reverts first. */
  assumePodVolumes(pod: Pod, nodeName: string, podVolumes: PodVolumes): { allBound: boolean; assumed: PodVolumes };
  /** RevertAssumedPodVolumes: back to the API objects; idempotent. */
  revertAssumedPodVolumes(podVolumes: PodVolumes): void;
  /** BindPodVolumes: write the assumed volumes and wait until the PV controller has bound them. */
  bindPodVolumes(pod: Pod, nodeName: string, podVolumes: PodVolumes, signal?: AbortSignal): Promise<void>;
  /**
   * The last check before the pod's Binding, on the API's objects read now: why the pod's claims do not let it run on
   * the node, or undefined.
   */
  checkPodVolumesFromAPI(pod: Pod, nodeName: string): Promise<string | undefined>;
  /** Stops following the store. */
  close(): void;
}
