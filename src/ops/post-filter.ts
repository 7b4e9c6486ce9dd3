// What kube-scheduler's PostFilter plugins add to a Pending pod's message (FitError.Diagnosis.PostFilterMsg), in
// the default profile's order: DynamicResources (nothing to deallocate for a pod without resource claims), then
// DefaultPreemption's verdict per node (upstream pkg/scheduler/framework/preemption).
import { copyNodeInfo, type NodeInfo } from '../cache/node-info.ts';
import type { Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import { fitErrorMessage } from '../framework/fit-error.ts';
import { isSuccess, type Status, status } from '../framework/interfaces.ts';
import type { Framework } from '../framework/runner.ts';

export const NO_CLAIMS_TO_DEALLOCATE = 'no new claims to deallocate';
export const PREEMPTION_NOT_HELPFUL = 'Preemption is not helpful for scheduling';
export const NO_PREEMPTION_VICTIMS = 'No preemption victims found for incoming pod';

export interface PostFilterOutcome {
  /**
   * Upstream's PostFilterMsg, which FitError appends after a space ('' when preemption would succeed: kube-scheduler
   * then writes none).
   */
  message: string;
  /** A node where evicting lower-priority pods makes room (kube-scheduler would nominate one such node). */
  preemptionCandidate?: string;
}

/** What upstream's preemption says when its extenders dropped every candidate the dry run found (evaluate). */
export const NO_CANDIDATE_NODE = 'no candidate node for preemption';

/**
 * DefaultPreemption's dry run reduced to its verdict: a node failed as Unschedulable is tried without every pod of
 * lower priority (upstream SelectVictimsOnNode's first step); other nodes are not helped by preemption. A generator
 * that yields once per node, so that a caller can stop between nodes (`drain` runs it to the end).
 *
 * `extender`: kube-scheduler's dry run ran only `framework` (its own plugins), then asked this extender's preempt verb
 * about the candidates it found, which keeps a node only where the volume plugins (`extender`) pass too; when it
 * keeps none, upstream says NO_CANDIDATE_NODE.
 */
export function* postFilter(
  framework: Framework,
  state: CycleState,
  pod: Pod,
  numAllNodes: number,
  statuses: ReadonlyMap<string, Status>,
  lookup: (name: string) => NodeInfo | undefined,
  minor: number,
  extender?: { framework: Framework; state: CycleState },
): Generator<void, PostFilterOutcome> {
  // DynamicResources' PostFilter adds its no-op outcome to the message up to v1.36; v1.37 only logs it (V(5),
  // kubernetes#140222).
  const parts = minor <= 36 ? [NO_CLAIMS_TO_DEALLOCATE] : [];
  if (pod.spec.preemptionPolicy === 'Never') {
    parts.push('preemption: not eligible due to preemptionPolicy=Never.');
    return { message: parts.join(', ') };
  }
  const priority = framework.priorityOf(pod);
  const verdicts: Status[] = [];
  let dropped = false;
  for (const [name, s] of statuses) {
    yield; // a step per node: the pending report runs this between the verbs (src/ops/pending-report.ts)
    const info = s.code === 'Unschedulable' ? lookup(name) : undefined;
    if (!info) {
      verdicts.push(status('UnschedulableAndUnresolvable', PREEMPTION_NOT_HELPFUL));
      continue;
    }
    const node = copyNodeInfo(info);
    const cycle = state.clone();
    const extenderCycle = extender?.state.clone();
    let victims = 0;
    for (const { pod: p } of info.pods.values()) {
      if (framework.priorityOf(p) >= priority) continue;
      node.removePod(p.metadata.uid);
      framework.runPreFilterRemovePod(cycle, pod, p, node);
      if (extender) extender.framework.runPreFilterRemovePod(extenderCycle!, pod, p, node);
      victims++;
    }
    if (victims === 0) {
      verdicts.push(status('UnschedulableAndUnresolvable', NO_PREEMPTION_VICTIMS));
      continue;
    }
    const after = framework.runFilterWithNominatedPods(cycle, pod, node);
    if (!isSuccess(after)) verdicts.push(after);
    else if (!extender || isSuccess(extender.framework.runFilterWithNominatedPods(extenderCycle!, pod, node)))
      return { message: '', preemptionCandidate: name };
    else dropped = true;
  }
  if (dropped) {
    parts.push(`preemption: ${NO_CANDIDATE_NODE}`);
    return { message: parts.join(', ') };
  }
  // Nodes never filtered (a preFilter narrowed the cycle) count as not helped.
  for (let i = statuses.size; i < numAllNodes; i++)
    verdicts.push(status('UnschedulableAndUnresolvable', PREEMPTION_NOT_HELPFUL));
  const preemption = fitErrorMessage(numAllNodes, '', verdicts);
  parts.push(`preemption: ${preemption}`);
  return { message: parts.join(', ') };
}
