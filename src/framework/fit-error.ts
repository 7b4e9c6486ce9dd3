// kube-scheduler's FitError.Error() (pkg/scheduler/framework/types.go): the one line a Pending pod's event carries.
import type { Status } from './interfaces.ts';

/** NoNodeAvailableMsg */
export function noNodeAvailable(numAllNodes: number): string {
  return `0/${numAllNodes} nodes are available`;
}

/**
 * "0/N nodes are available: <preFilter message>." when preFilter rejected the pod (the per-node statuses then repeat
 * it and are left out), else "0/N nodes are available: <count> <reason>, ...." with every reason of every failed node
 * counted and the "<count> <reason>" strings sorted bytewise, as Go's sort.Strings does (so "10 ..." sorts before
 * "9 ..."). No filter reasons (no nodes at all) leaves the bare "0/N nodes are available:".
 */
export function fitErrorMessage(numAllNodes: number, preFilterMsg: string, failed: Iterable<Status>): string {
  let message = `${noNodeAvailable(numAllNodes)}:`;
  if (preFilterMsg !== '') return `${message} ${preFilterMsg}.`;
  const counts = new Map<string, number>();
  for (const s of failed) for (const reason of s.reasons) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  const histogram = [...counts].map(([reason, n]) => `${n} ${reason}`);
  histogram.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (histogram.length > 0) message += ` ${histogram.join(', ')}.`;
  return message;
}
