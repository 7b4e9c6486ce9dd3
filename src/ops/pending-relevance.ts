// Which changes to a scheduled pod can alter a pending pod's explanation. The store holds pods trimmed to what
// scheduling reads (src/cluster/trim.ts), so most updates of a running pod (its conditions, container statuses)
// arrive as a new resourceVersion and nothing else, which can change no explanation but those listing preemption's
// victims (below). A change of labels alone matters only to explanations that read other pods' labels: the pod's own required pod (anti-)affinity terms (InterPodAffinity
// matches them against existing pods; existing pods' terms are matched against the pending pod's labels, not their
// own), its topology spread constraints (PodTopologySpread counts matching pods), and preemption's victims (PDBs
// select them by labels). test/ops/pending-relevance.test.ts checks the report kept this way against one computed
// afresh.
import { isDeepStrictEqual } from 'node:util';
import type { Pod } from '../cluster/types.ts';
import type { PendingPod } from './pending.ts';

/**
 * Whether an update of a pod changed nothing but its labels (and resourceVersion): then it can alter only the
 * explanations that readsOtherPods says read them.
 */
export function onlyLabelsChanged(old: Pod, pod: Pod): boolean {
  const without = (p: Pod) => ({ ...p, metadata: { ...p.metadata, resourceVersion: '', labels: undefined } });
  return isDeepStrictEqual(without(old), without(pod));
}

/** Whether an update of a pod changed nothing the store keeps but its resourceVersion (its status, mostly). */
export function onlyVersionChanged(old: Pod, pod: Pod): boolean {
  const without = (p: Pod) => ({ ...p, metadata: { ...p.metadata, resourceVersion: '' } });
  return isDeepStrictEqual(without(old), without(pod));
}

/**
 * Whether the explanation of `pod` read other pods' labels (above), or lists preemption's victims: besides the PDBs,
 * their order among equals follows the node's pods, which any update of one of them reorders.
 */
export function readsOtherPods(pod: Pod, result: PendingPod): boolean {
  const affinity = pod.spec.affinity;
  return (
    (affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length ?? 0) > 0 ||
    (affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length ?? 0) > 0 ||
    (pod.spec.topologySpreadConstraints?.length ?? 0) > 0 ||
    result.preemption?.helps === true
  );
}
