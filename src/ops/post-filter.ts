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

/** DefaultPreemption's verdict on one node: its status after the dry run, or that it makes room (or would, had the extender kept it). */
export type PreemptionVerdict = Status | typeof CANDIDATE | typeof DROPPED;
/** Evicting lower-priority pods makes room on the node. */
export const CANDIDATE = 'candidate';
/** Kube-scheduler's own dry run found room on the node, which this extender's preempt verb would drop. */
export const DROPPED = 'dropped';

/** What a dry run reads besides the node: see postFilter. */
export interface PreemptionDryRun {
  framework: Framework;
  state: CycleState;
  pod: Pod;
  /** framework.priorityOf(pod). */
  priority: number;
  lookup: (name: string) => NodeInfo | undefined;
  extender?: { framework: Framework; state: CycleState };
}

/**
 * The dry run on one node that failed with `s` (upstream SelectVictimsOnNode's first step): a node failed as
 * Unschedulable is tried without every pod of lower priority; other nodes are not helped by preemption. It reads the
 * node and the pods nominated to it only, so the pending report reruns it for a node whose pods changed.
 */
export function preemptionVerdict(run: PreemptionDryRun, name: string, s: Status): PreemptionVerdict {
  const { framework, pod, extender } = run;
  const info = s.code === 'Unschedulable' ? run.lookup(name) : undefined;
  if (!info) return status('UnschedulableAndUnresolvable', PREEMPTION_NOT_HELPFUL);
  const node = copyNodeInfo(info);
  const cycle = run.state.clone();
  const extenderCycle = extender?.state.clone();
  let victims = 0;
  for (const { pod: p } of info.pods.values()) {
    if (framework.priorityOf(p) >= run.priority) continue;
    node.removePod(p.metadata.uid);
    framework.runPreFilterRemovePod(cycle, pod, p, node);
    if (extender) extender.framework.runPreFilterRemovePod(extenderCycle!, pod, p, node);
    victims++;
  }
  if (victims === 0) return status('UnschedulableAndUnresolvable', NO_PREEMPTION_VICTIMS);
  const after = framework.runFilterWithNominatedPods(cycle, pod, node);
  if (!isSuccess(after)) return after;
  if (!extender || isSuccess(extender.framework.runFilterWithNominatedPods(extenderCycle!, pod, node)))
    return CANDIDATE;
  return DROPPED;
}

/**
 * PostFilterMsg when no node is a candidate: `verdicts` are those of the nodes tried, in the nodes' order; nodes
 * never filtered (a preFilter narrowed the cycle) count as not helped. `null` for a pod that may not preempt.
 */
export function postFilterMessage(
  pod: Pod,
  minor: number,
  numAllNodes: number,
  verdicts: readonly PreemptionVerdict[] | null,
): string {
  // DynamicResources' PostFilter adds its no-op outcome to the message up to v1.36; v1.37 only logs it (V(5),
  // kubernetes#140222).
  const parts = minor <= 36 ? [NO_CLAIMS_TO_DEALLOCATE] : [];
  if (pod.spec.preemptionPolicy === 'Never') parts.push('preemption: not eligible due to preemptionPolicy=Never.');
  else if (verdicts?.includes(DROPPED)) parts.push(`preemption: ${NO_CANDIDATE_NODE}`);
  else {
    const failed = (verdicts ?? []) as Status[];
    const rest = Array.from({ length: Math.max(0, numAllNodes - failed.length) }, () =>
      status('UnschedulableAndUnresolvable', PREEMPTION_NOT_HELPFUL),
    );
    parts.push(`preemption: ${fitErrorMessage(numAllNodes, '', [...failed, ...rest])}`);
  }
  return parts.join(', ');
}

/**
 * DefaultPreemption's dry run reduced to its verdict (preemptionVerdict per failed node, in order, until one makes
 * room). A generator that yields once per node, so that a caller can stop between nodes (`drain` runs it to the end).
 * `tried`, when given, gets each node's verdict.
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
  tried?: Map<string, PreemptionVerdict>,
): Generator<void, PostFilterOutcome> {
  if (pod.spec.preemptionPolicy === 'Never') return { message: postFilterMessage(pod, minor, numAllNodes, null) };
  const run = { framework, state, pod, priority: framework.priorityOf(pod), lookup, extender };
  const verdicts: PreemptionVerdict[] = [];
  for (const [name, s] of statuses) {
    yield; // a step per node: the pending report runs this between the verbs (src/ops/pending-report.ts)
    const v = preemptionVerdict(run, name, s);
    tried?.set(name, v);
    if (v === CANDIDATE) return { message: '', preemptionCandidate: name };
    verdicts.push(v);
  }
  return { message: postFilterMessage(pod, minor, numAllNodes, verdicts) };
}
