// The nominated-pod tracker (upstream pkg/scheduler/backend/queue/nominator.go): pods that preempted others and wait,
// with status.nominatedNodeName set, for their victims to leave. While they wait, filter treats them as already on
// the node for pods of lower or equal priority. Fed from the store's pod events, so a restart rebuilds it from
// status.nominatedNodeName.
import type { ClusterStore, StoreEvent } from '../cluster/store.ts';
import type { Pod } from '../cluster/types.ts';
import { type PriorityClasses, podPriority } from './priority.ts';
import { isTerminal } from './store-feed.ts';

export interface NominatedPod {
  readonly pod: Pod;
  readonly nodeName: string;
  readonly priority: number;
}

const NONE: readonly NominatedPod[] = Object.freeze([]);

function nominatedNodeName(pod: Pod): string {
  return pod.status?.nominatedNodeName ?? '';
}

/** Pending (not bound, not finished) pods are the only ones that can wait for a node. */
function isWaiting(pod: Pod): boolean {
  return !pod.spec.nodeName && !isTerminal(pod);
}

export class Nominator {
  /** node name → its nominated pods, in nomination order (upstream nominatedPods). */
  readonly #byNode = new Map<string, readonly NominatedPod[]>();
  /** pod UID → node name (upstream nominatedPodToNode). */
  readonly #nodeOf = new Map<string, string>();
  readonly #classes: PriorityClasses | undefined;

  constructor(classes?: PriorityClasses) {
    this.#classes = classes;
  }

  /**
   * Upstream AddNominatedPod: replaces any earlier nomination of the pod. An empty node name (and a pod that no
   * longer waits) means no nomination.
   */
  add(pod: Pod, nodeName = nominatedNodeName(pod)): void {
    this.delete(pod);
    if (nodeName === '' || !isWaiting(pod)) return;
    this.#nodeOf.set(pod.metadata.uid, nodeName);
    // Copy on write: a list handed out by nominatedPodsForNode never changes under its reader.
    // Priority resolved once: a PriorityClass edit does not change the priority of existing pods upstream either.
    const entry = { pod, nodeName, priority: podPriority(pod, this.#classes) };
    this.#byNode.set(nodeName, [...(this.#byNode.get(nodeName) ?? []), entry]);
  }

  /** Upstream DeleteNominatedPodIfExists. */
  delete(pod: Pod): void {
    const uid = pod.metadata.uid;
    const nodeName = this.#nodeOf.get(uid);
    if (nodeName === undefined) return;
    this.#nodeOf.delete(uid);
    const rest = (this.#byNode.get(nodeName) ?? []).filter((n) => n.pod.metadata.uid !== uid);
    if (rest.length === 0) this.#byNode.delete(nodeName);
    else this.#byNode.set(nodeName, rest);
  }

  /**
   * Upstream UpdateNominatedPod: when neither the old nor the new object names a node, an existing nomination is
   * kept (the scheduler nominated the pod and its status patch has not arrived yet); otherwise the new object decides.
   */
  update(oldPod: Pod, newPod: Pod): void {
    const kept = nominatedNodeName(oldPod) === '' && nominatedNodeName(newPod) === '';
    const nodeName = kept ? (this.#nodeOf.get(newPod.metadata.uid) ?? '') : nominatedNodeName(newPod);
    this.add(newPod, nodeName);
  }

  /** Pods nominated to the node (upstream NominatedPodsForNode); a snapshot, safe to keep. Filter asks per node. */
  nominatedPodsForNode(nodeName: string): readonly NominatedPod[] {
    return this.#byNode.get(nodeName) ?? NONE;
  }

  nodeOf(uid: string): string | undefined {
    return this.#nodeOf.get(uid);
  }

  /** node name → nominated pods, nodes by name. */
  entries(): [string, readonly NominatedPod[]][] {
    return [...this.#byNode.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  get size(): number {
    return this.#nodeOf.size;
  }

  /**
   * Follows the store's pods after replaying what it holds (a restart rebuilds from status.nominatedNodeName):
   * bound, finished or deleted pods leave. Returns the unsubscribe function.
   */
  attach(store: ClusterStore): () => void {
    for (const pod of store.list('Pod')) this.add(pod);
    return store.on('Pod', (e: StoreEvent<'Pod'>) => {
      if (e.type === 'add') this.add(e.obj);
      else if (e.type === 'delete') this.delete(e.obj);
      else if (e.old.metadata.uid !== e.obj.metadata.uid) {
        this.delete(e.old);
        this.add(e.obj);
      } else this.update(e.old, e.obj);
    });
  }
}
