// prioritize: an integer score 0..10 for every candidate node (kube-scheduler multiplies it by weight × 10).
import { candidatesOf } from './candidates.ts';
import type { ExtenderDeps } from './deps.ts';
import { podFromRequest } from './pod.ts';
import type { ExtenderArgs, HostPriorityList } from './wire.ts';

export function prioritize(args: ExtenderArgs, deps: ExtenderDeps): HostPriorityList {
  const candidates = candidatesOf(args, deps);
  const pod = podFromRequest(args.Pod);
  return deps.framework.scoreNodes(pod, candidates.names, candidates.lookup, (Host, Score) => ({ Host, Score }));
}
