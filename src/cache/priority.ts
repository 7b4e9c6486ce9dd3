// A pod's priority and preemption policy (upstream corev1helpers.PodPriority, util.MoreImportantPod). The priority
// admission plugin copies both from the PriorityClass into the pod spec; a pod sent without them (a test, a cluster
// without the admission plugin) falls back to its PriorityClass, then the global default class, then 0.
import type { ClusterStore } from '../cluster/store.ts';
import type { Pod, PriorityClass } from '../cluster/types.ts';

export type PriorityClasses = Pick<ClusterStore, 'get' | 'list'>;

function priorityClassOf(pod: Pod, classes: PriorityClasses | undefined): PriorityClass | undefined {
  if (!classes) return undefined;
  const name = pod.spec.priorityClassName;
  if (name) return classes.get('PriorityClass', name);
  for (const pc of classes.list('PriorityClass')) if (pc.globalDefault) return pc;
  return undefined;
}

export function podPriority(pod: Pod, classes?: PriorityClasses): number {
  const own = pod.spec.priority;
  if (typeof own === 'number') return own;
  return priorityClassOf(pod, classes)?.value ?? 0;
}

/** `Never` forbids preempting others; upstream's default is PreemptLowerPriority. */
export function preemptionPolicy(pod: Pod, classes?: PriorityClasses): string {
  return pod.spec.preemptionPolicy ?? priorityClassOf(pod, classes)?.preemptionPolicy ?? 'PreemptLowerPriority';
}

/** Upstream GetPodStartTime: a pod that has not started yet counts as started now. */
export function podStartTime(pod: Pod, now: number): number {
  const t = pod.status?.startTime ? Date.parse(pod.status.startTime) : Number.NaN;
  return Number.isFinite(t) ? t : now;
}

/**
 * Upstream MoreImportantPod as a sort comparator: higher priority first, then the earlier start. `priorityOf`
 * lets callers resolve priorities once.
 */
export function moreImportantFirst(priorityOf: (pod: Pod) => number, now = Date.now()): (a: Pod, b: Pod) => number {
  return (a, b) => {
    const d = priorityOf(b) - priorityOf(a);
    return d !== 0 ? d : podStartTime(a, now) - podStartTime(b, now);
  };
}
