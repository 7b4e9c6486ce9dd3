// The writer carries the extender's decisions to the cluster. Writes never touch the cache directly:
// the source brings the result back as an event, as a watch would.
import type { PersistentVolume, PersistentVolumeClaim, Pod } from './types.ts';

/** A write that the API refused; `reason` follows the API's Status reasons (Conflict, NotFound, ...). */
export class WriteError extends Error {
  readonly code: number;
  readonly reason: string;
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.name = 'WriteError';
    this.code = code;
    this.reason = reason;
  }
}

export interface ClusterWriter {
  /** Creates the pod's Binding (`pods/{name}/binding`, UID precondition). */
  bindPod(pod: { namespace: string; name: string; uid: string }, nodeName: string): Promise<void>;
  /** Replaces a PV; `metadata.resourceVersion` is the precondition (409 Conflict when stale). Returns the stored object. */
  updatePersistentVolume(pv: PersistentVolume): Promise<PersistentVolume>;
  /** Replaces a PVC, with the same resourceVersion precondition. Returns the stored object. */
  updatePersistentVolumeClaim(pvc: PersistentVolumeClaim): Promise<PersistentVolumeClaim>;
  /** Reads a pod from the source of truth (reconciling an assumed pod that the watch never confirmed). */
  getPod(namespace: string, name: string): Promise<Pod | undefined>;
}
