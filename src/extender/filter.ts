// filter: which candidate nodes can take the pod, and why the others cannot. Answers from memory, but for a pod with
// claims that fits nowhere, whose claims are first checked against the API server (confirmClaimsOfRejection).
import { isDeepStrictEqual } from 'node:util';
import { objectKey, type PersistentVolumeClaim, type Pod } from '../cluster/types.ts';
import { type FilterOutcome, FrameworkError } from '../framework/runner.ts';
import { podClaimRefs } from '../volumes/claims.ts';
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

export const fitsNowhere = (r: ExtenderFilterResult) => (r.NodeNames ?? r.Nodes?.items ?? []).length === 0;

/**
 * Our view of a claim can lag kube-scheduler's: each follows the API server on its own watch, and kube-scheduler
 * retries a pod on the claim event it saw first (a StatefulSet's claim created just before its pod, an Immediate claim
 * just bound). Rejected from the older view, the pod would wait in the unschedulable queue for the next event, up to
 * five minutes. So a pod with claims that fits no node is answered from our view only when each of its claims there
 * is the API server's current one; otherwise with an Error, which kube-scheduler retries after its backoff. Costs one
 * GET per claim of a rejected claim pod; when the API server cannot be read, the answer stands as it was.
 */
/**
 * The same claim but for what no verdict reads: its resourceVersion and its status conditions (the PVC protection
 * controller's Unused condition changes whenever a pod using the claim comes or goes: a StatefulSet rollout's every
 * pod). An Error for such a change would cost the pod kube-scheduler's error backoff, for nothing.
 */
function sameForScheduling(a: PersistentVolumeClaim | undefined, b: PersistentVolumeClaim | undefined): boolean {
  if (!a || !b) return a === b;
  if (a.metadata.resourceVersion === b.metadata.resourceVersion) return true;
  const strip = (c: PersistentVolumeClaim) => ({
    ...c,
    metadata: { ...c.metadata, resourceVersion: undefined },
    status: c.status && { ...c.status, conditions: undefined },
  });
  return isDeepStrictEqual(strip(a), strip(b));
}

export async function confirmClaimsOfRejection(
  args: ExtenderArgs,
  result: ExtenderFilterResult,
  deps: ExtenderDeps,
): Promise<ExtenderFilterResult> {
  if (result.Error || !fitsNowhere(result)) return result;
  const pod: Pod = podFromRequest(args.Pod);
  const namespace = pod.metadata.namespace ?? 'default';
  for (const { name } of podClaimRefs(pod)) {
    const seen = deps.store.get('PersistentVolumeClaim', `${namespace}/${name}`);
    let live: PersistentVolumeClaim | undefined;
    try {
      live = await deps.writer.getPersistentVolumeClaim(namespace, name);
    } catch (err) {
      deps.logger.debug({ err, pod: objectKey('Pod', pod), claim: name }, 'cannot confirm a claim: answering as seen');
      return result;
    }
    if (sameForScheduling(seen, live)) continue;
    const ours = seen?.metadata.resourceVersion;
    const theirs = live?.metadata.resourceVersion;
    const message = `persistentvolumeclaim "${namespace}/${name}" changed since the extender saw it (resourceVersion ${ours ?? 'none'}, now ${theirs ?? 'deleted'}): retry once its watch has caught up`;
    deps.logger.info({ pod: objectKey('Pod', pod), claim: name, ours, theirs }, message);
    return { Nodes: null, NodeNames: null, FailedNodes: {}, FailedAndUnresolvableNodes: {}, Error: message };
  }
  return result;
}
