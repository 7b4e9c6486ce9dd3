// preempt: kube-scheduler's DefaultPreemption chose candidate nodes and victims with in-tree filters only.
// The answer always uses NodeNameToMetaVictims (UIDs), whatever the request's mode. Until volume-aware victim
// selection lands (src/preemption/), every candidate passes with the victims the scheduler chose, in its order.
import type { ExtenderDeps } from './deps.ts';
import type { ExtenderPreemptionArgs, ExtenderPreemptionResult, MetaVictims } from './wire.ts';

export function preempt(args: ExtenderPreemptionArgs, _deps: ExtenderDeps): ExtenderPreemptionResult {
  const out: Record<string, MetaVictims> = {};
  if (args.NodeNameToMetaVictims) {
    for (const [node, victims] of Object.entries(args.NodeNameToMetaVictims)) {
      out[node] = { Pods: victims.Pods ?? [], NumPDBViolations: victims.NumPDBViolations };
    }
  } else if (args.NodeNameToVictims) {
    for (const [node, victims] of Object.entries(args.NodeNameToVictims)) {
      out[node] = {
        Pods: (victims.Pods ?? []).map((pod) => ({ UID: pod.metadata.uid })),
        NumPDBViolations: victims.NumPDBViolations,
      };
    }
  }
  return { NodeNameToMetaVictims: out };
}
