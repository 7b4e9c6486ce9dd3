// The scheduler cache contract (upstream pkg/scheduler/backend/cache/interface.go), as the verbs use it.
import type { Pod } from '../cluster/types.ts';
import type { NodeInfo } from './node-info.ts';
import type { Snapshot } from './snapshot.ts';

export interface AssumedPod {
  uid: string;
  namespace: string;
  name: string;
  nodeName: string;
  /** Our bind for it has finished (successfully); reconciliation may start after the TTL. */
  bindingFinished: boolean;
  /** ms since epoch when bind finished, if it did. */
  finishedAt?: number;
}

export interface SchedulerCache {
  /** Adds a pod (with spec.nodeName set) before the API has confirmed it. Throws if the UID is cached. */
  assumePod(pod: Pod): void;
  /** Our bind for an assumed pod finished; starts the confirmation TTL. */
  finishBinding(pod: Pod): void;
  /**
   * Drops an assumed pod (bind failed). Throws if the cache has the pod as added, or on another node;
   * a pod the cache no longer holds is a no-op (upstream: nothing left to undo).
   */
  forgetPod(pod: Pod): void;
  /** Informer-driven transitions; the cache subscribes to the store itself, these are exposed for tests. */
  addPod(pod: Pod): void;
  updatePod(oldPod: Pod, newPod: Pod): void;
  removePod(pod: Pod): void;

  isAssumed(uid: string): boolean;
  /** The pod as the cache knows it (assumed or added), by UID. */
  getPod(uid: string): Pod | undefined;
  /** The live NodeInfo, ghosts included (node undefined); it changes with every event, snapshots do not. */
  nodeInfo(name: string): NodeInfo | undefined;
  /** Node names interleaved across zones (node tree order). Ghost nodes are not listed. */
  nodeNames(): string[];
  assumedPods(): AssumedPod[];
  /** Pods held, assumed and added. */
  podCount(): number;
  /** NodeInfos held, ghosts included (upstream NodeCount). */
  nodeCount(): number;
  generation(): number;
  /** Brings a snapshot up to date, copying only the NodeInfos that changed since it was last updated. */
  updateSnapshot(snapshot: Snapshot): void;
  /** A fresh snapshot of every node (not ghosts), in node tree order. */
  snapshot(): Snapshot;
}
