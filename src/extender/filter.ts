// filter: which candidate nodes can take the pod, and why the others cannot. Answers from memory only.
import { objectKey } from '../cluster/types.ts';
import { type FilterOutcome, FrameworkError } from '../framework/runner.ts';
import { candidatesOf, unknownNodeReason } from './candidates.ts';
import type { ExtenderDeps } from './deps.ts';
import { podFromRequest } from './pod.ts';
import type { ExtenderArgs, ExtenderFilterResult, WireNode } from './wire.ts';

export function filter(args: ExtenderArgs, deps: ExtenderDeps): ExtenderFilterResult {
  const candidates = candidatesOf(args, deps);
  const pod = podFromRequest(args.Pod);
  let outcome: FilterOutcome;
  try {
    outcome = deps.framework.filterNodes(pod, candidates.names, candidates.lookup, unknownNodeReason);
  } catch (err) {
    // An internal failure is not a verdict: kube-scheduler fails this attempt and retries the pod later.
    if (!(err instanceof FrameworkError)) throw err;
    deps.logger.error({ err, pod: objectKey('Pod', pod) }, 'filter failed');
    return { Nodes: null, NodeNames: null, FailedNodes: {}, FailedAndUnresolvableNodes: {}, Error: err.message };
  }
  const result: ExtenderFilterResult = {
    Nodes: null,
    NodeNames: null,
    FailedNodes: Object.fromEntries(outcome.failed),
    FailedAndUnresolvableNodes: Object.fromEntries(outcome.unresolvable),
    Error: '',
  };
  if (candidates.mode === 'node-cache') {
    result.NodeNames = outcome.feasible;
  } else {
    const items: WireNode[] = outcome.feasible.map((name) => candidates.nodes!.get(name)!);
    result.Nodes = { metadata: {}, items };
  }
  return result;
}
