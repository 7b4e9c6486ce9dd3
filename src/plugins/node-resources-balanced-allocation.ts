// NodeResourcesBalancedAllocation (upstream plugins/noderesources/balanced_allocation.go): prefers nodes where cpu
// and memory would be used in equal shares after placing the pod (1 - the spread of the two fractions).
import type { NodeInfo } from '../cache/node-info.ts';
import { type PodResource, podResource } from '../cache/resources.ts';
import type { Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import { type PreScorePlugin, type ScorePlugin, SKIP, type Status, SUCCESS } from '../framework/interfaces.ts';
import { MAX_NODE_SCORE } from '../framework/runner.ts';

export const NODE_RESOURCES_BALANCED_ALLOCATION = 'NodeResourcesBalancedAllocation';
const PRE_SCORE_KEY = 'PreScoreNodeResourcesBalancedAllocation';

/** balancedResourceScorer over the fractions of the resources the node has. */
export function balancedScore(fractions: number[]): number {
  const f = fractions.map((x) => Math.min(x, 1));
  let std = 0;
  if (f.length === 2) std = Math.abs((f[0] - f[1]) / 2);
  else if (f.length > 2) {
    const mean = f.reduce((a, b) => a + b, 0) / f.length;
    std = Math.sqrt(f.reduce((a, x) => a + (x - mean) ** 2, 0) / f.length);
  }
  return Math.trunc((1 - std) * MAX_NODE_SCORE);
}

export class NodeResourcesBalancedAllocationPlugin implements PreScorePlugin, ScorePlugin {
  readonly name = NODE_RESOURCES_BALANCED_ALLOCATION;

  /** A pod requesting neither cpu nor memory is not scored (upstream skips best-effort pods). */
  preScore(state: CycleState, pod: Pod): Status {
    const r = podResource(pod);
    if (r.requests.milliCPU === 0 && r.requests.memory === 0) return SKIP;
    state.write(PRE_SCORE_KEY, r);
    return SUCCESS;
  }

  score(state: CycleState, pod: Pod, nodeInfo: NodeInfo): number {
    const r = state.read<PodResource>(PRE_SCORE_KEY) ?? podResource(pod);
    const { allocatable, requested } = nodeInfo;
    const fractions: number[] = [];
    if (allocatable.milliCPU > 0) fractions.push((requested.milliCPU + r.requests.milliCPU) / allocatable.milliCPU);
    if (allocatable.memory > 0) fractions.push((requested.memory + r.requests.memory) / allocatable.memory);
    return balancedScore(fractions);
  }
}
