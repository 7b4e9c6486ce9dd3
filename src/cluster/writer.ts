// The writer carries the extender's decisions to the cluster. Writes never touch the cache directly:
// the source brings the result back as an event, as a watch would.
import type { PersistentVolume, PersistentVolumeClaim, Pod } from './types.ts';
import { ANN_BOUND_BY_CONTROLLER } from './volume-annotations.ts';

/**
 * A write that the API refused; `reason` follows the API's Status reasons (Conflict, NotFound, ...). `uncertain`: the
 * write may have been applied all the same (its reply was lost, it timed out, or it failed with 5xx) and the writer
 * could not tell, so the caller checks what it can (its store, the API) before calling it failed.
 */
export class WriteError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly uncertain: boolean;
  constructor(code: number, reason: string, message: string, uncertain = false) {
    super(message);
    this.name = 'WriteError';
    this.code = code;
    this.reason = reason;
    this.uncertain = uncertain;
  }
}

/** The pod a write is for: its UID, and with `resourceVersion` the version it was read at, are preconditions. */
export interface PodPrecondition {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion?: string;
}

export interface ClusterWriter {
  /**
   * Creates the pod's Binding (`pods/{name}/binding`, UID precondition). A 409 (the pod bound already, perhaps by an
   * earlier attempt) and an uncertain failure are thrown as they are: the caller reads the pod to know the outcome.
   */
  bindPod(pod: { namespace: string; name: string; uid: string }, nodeName: string): Promise<void>;
  /**
   * Sets the pod's `status.nominatedNodeName` (a merge patch of `pods/{name}/status`, UID precondition, and the
   * resourceVersion's when given): the node kube-scheduler tries first in the pod's next attempt (findNodesThatFitPod's
   * evaluateNominatedNode).
   */
  nominatePod(pod: PodPrecondition, nodeName: string): Promise<void>;
  /** Replaces a PV; `metadata.resourceVersion` is the precondition (409 Conflict when stale). Returns the stored object. */
  updatePersistentVolume(pv: PersistentVolume): Promise<PersistentVolume>;
  /** Replaces a PVC, with the same resourceVersion precondition. Returns the stored object. */
  updatePersistentVolumeClaim(pvc: PersistentVolumeClaim): Promise<PersistentVolumeClaim>;
  /**
   * The PV controller's unbindVolume: a PV bound by a controller loses its claimRef and `bound-by-controller`, one
   * pre-bound by a user keeps its claimRef without the UID. Same resourceVersion precondition.
   */
  unbindPersistentVolume(pv: PersistentVolume): Promise<PersistentVolume>;
  /**
   * The claim's half of a binding, as the PV controller's bindClaimToVolume writes it: `spec.volumeName` (which the
   * API lets be set once, from empty) and `annotations`, null removing one. Same resourceVersion precondition.
   */
  bindClaimToVolume(
    pvc: PersistentVolumeClaim,
    volumeName: string,
    annotations: Record<string, string | null>,
  ): Promise<PersistentVolumeClaim>;
  /** Reads a pod from the source of truth (reconciling an assumed pod that the watch never confirmed). */
  getPod(namespace: string, name: string): Promise<Pod | undefined>;
  /** Reads a PV from the source of truth (what a bind checks before its Binding), undefined when it does not exist. */
  getPersistentVolume(name: string): Promise<PersistentVolume | undefined>;
  /** Reads a claim from the source of truth, undefined when it does not exist. */
  getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined>;
}

/** bindClaimToVolume's result, for writers that store whole objects. */
export function claimBoundToVolume(
  pvc: PersistentVolumeClaim,
  volumeName: string,
  annotations: Record<string, string | null>,
): PersistentVolumeClaim {
  const merged: Record<string, string> = { ...pvc.metadata.annotations };
  for (const [key, value] of Object.entries(annotations)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return { ...pvc, metadata: { ...pvc.metadata, annotations: merged }, spec: { ...pvc.spec, volumeName } };
}

/** unbindVolume's result, for writers that store whole objects. */
export function unboundVolume(pv: PersistentVolume): PersistentVolume {
  const annotations = { ...pv.metadata.annotations };
  if (!Object.hasOwn(annotations, ANN_BOUND_BY_CONTROLLER)) {
    const claimRef = pv.spec.claimRef && { ...pv.spec.claimRef, uid: undefined };
    return { ...pv, spec: { ...pv.spec, claimRef } };
  }
  delete annotations[ANN_BOUND_BY_CONTROLLER];
  const { claimRef: _dropped, ...spec } = pv.spec;
  return { ...pv, metadata: { ...pv.metadata, annotations }, spec };
}
