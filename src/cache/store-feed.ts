// Feeds a scheduler cache from the cluster store, the way kube-scheduler's informer handlers feed its cache
// (pkg/scheduler/eventhandlers.go): nodes always; pods only while assigned and not terminal.
import type { ClusterStore, StoreEvent } from '../cluster/store.ts';
import { type Node, objectKey, type Pod } from '../cluster/types.ts';
import type { Log } from '../log.ts';

const TERMINAL_PHASES = new Set(['Succeeded', 'Failed']);

export function isTerminal(pod: Pod): boolean {
  return TERMINAL_PHASES.has(pod.status?.phase ?? '');
}

/** Upstream's informer filter: assigned pods, minus terminal ones (the pod informer's field selector). */
export function isAssignedNonTerminal(pod: Pod): boolean {
  return !!pod.spec.nodeName && !isTerminal(pod);
}

/** The cache verbs the feed drives. */
export interface FedCache {
  addPod(pod: Pod): void;
  updatePod(oldPod: Pod, newPod: Pod): void;
  removePod(pod: Pod): void;
  getPod(uid: string): Pod | undefined;
  isAssumed(uid: string): boolean;
  addNode(node: Node): void;
  removeNode(node: Node): void;
  nodeInfo(name: string): unknown;
}

/**
 * Subscribes to the store's Node and Pod events after replaying what it already holds. Handlers never throw: a
 * transition the cache refuses is logged and, where the event says what the truth is, repaired.
 * Returns the unsubscribe function.
 */
export function feedFromStore(cache: FedCache, store: ClusterStore, log: Log): () => void {
  const guard = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      log.error({ err }, 'Scheduler cache refused an event');
    }
  };

  const onPodAdd = (pod: Pod) => {
    const uid = pod.metadata.uid;
    const cached = cache.getPod(uid);
    if (cached && !cache.isAssumed(uid)) {
      // Already added, e.g. confirmed by reconciling before the watch caught up: the event is newer, keep it.
      log.info({ pod: objectKey('Pod', pod), uid }, 'Pod already added; updating it from the watch');
      cache.updatePod(cached, pod);
      return;
    }
    cache.addPod(pod);
  };

  const onPodUpdate = (oldPod: Pod, newPod: Pod) => {
    const uid = newPod.metadata.uid;
    // A missed add, or an assumed pod whose add we never saw: the update carries the full truth.
    if (!cache.getPod(uid) || cache.isAssumed(uid)) cache.addPod(newPod);
    else cache.updatePod(oldPod, newPod);
  };

  const onPodDelete = (pod: Pod) => {
    if (cache.getPod(pod.metadata.uid)) cache.removePod(pod);
  };

  /**
   * Upstream's FilteringResourceEventHandler plus its UID-change split. Two deliberate differences: a deletion
   * removes whatever the cache holds under that UID (a deleted pod frees its node even if we only assumed it), and
   * a pod that turns terminal while assumed is dropped at once.
   */
  const onPodEvent = (e: StoreEvent<'Pod'>) => {
    if (e.type === 'add') {
      if (isAssignedNonTerminal(e.obj)) onPodAdd(e.obj);
      return;
    }
    if (e.type === 'delete') {
      onPodDelete(e.obj);
      return;
    }
    const { old, obj } = e;
    if (old.metadata.uid !== obj.metadata.uid) {
      onPodDelete(old);
      if (isAssignedNonTerminal(obj)) onPodAdd(obj);
    } else if (isAssignedNonTerminal(obj)) {
      if (isAssignedNonTerminal(old)) onPodUpdate(old, obj);
      else onPodAdd(obj);
    } else if (isAssignedNonTerminal(old)) {
      onPodDelete(old);
    } else if (isTerminal(obj)) {
      onPodDelete(obj);
    }
    // Otherwise the pod is still pending (e.g. a status patch while our bind is in flight): nothing to do.
  };

  const onNodeEvent = (e: StoreEvent<'Node'>) => {
    if (e.type !== 'delete') cache.addNode(e.obj);
    else if (cache.nodeInfo(e.obj.metadata.name)) cache.removeNode(e.obj);
  };

  for (const node of store.list('Node')) guard(() => cache.addNode(node));
  for (const pod of store.list('Pod')) if (isAssignedNonTerminal(pod)) guard(() => onPodAdd(pod));
  const offNodes = store.on('Node', (e) => guard(() => onNodeEvent(e)));
  const offPods = store.on('Pod', (e) => guard(() => onPodEvent(e)));
  return () => {
    offNodes();
    offPods();
  };
}
