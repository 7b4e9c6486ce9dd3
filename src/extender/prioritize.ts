// prioritize: an integer score 0..10 per candidate node (kube-scheduler multiplies it by weight × 10). Nodes that score
// 0 are left out: kube-scheduler adds only the hosts listed (schedule_one.go), so the verdict is the same, and a pod
// without claims is answered `[]` instead of tens of KiB of zeros written to the socket for every pod.
import { candidatesOf } from './candidates.ts';
import type { ExtenderDeps } from './deps.ts';
import { podFromRequest } from './pod.ts';
import type { ExtenderArgs, HostPriorityList } from './wire.ts';

export function prioritize(args: ExtenderArgs, deps: ExtenderDeps): HostPriorityList {
  const candidates = candidatesOf(args, deps);
  const pod = podFromRequest(args.Pod);
  const scored = deps.framework.scoreNodes(pod, candidates.names, candidates.lookup, (Host, Score) => ({
    Host,
    Score,
  }));
  return scored.filter((host) => host.Score !== 0);
}
