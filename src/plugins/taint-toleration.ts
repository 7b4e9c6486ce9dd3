// TaintToleration (upstream plugins/tainttoleration): a NoSchedule or NoExecute taint the pod does not tolerate
// excludes the node; fewer untolerated PreferNoSchedule taints score higher.
import type { NodeInfo } from '../cache/node-info.ts';
import type { Pod, Taint, Toleration } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type FilterPlugin,
  type NodeScore,
  type NormalizeScorePlugin,
  type PreScorePlugin,
  type ScorePlugin,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import { MAX_NODE_SCORE } from '../framework/runner.ts';
import {
  defaultNormalizeScore,
  doNotScheduleTaints,
  findMatchingUntoleratedTaint,
  tolerationsTolerateTaint,
} from './helper.ts';

export const TAINT_TOLERATION = 'TaintToleration';
/** Since v1.33 the reason no longer names the taint (v1.32 wrote `node(s) had untolerated taint {key: value}`). */
export const ERR_REASON_UNTOLERATED = 'node(s) had untolerated taint(s)';
const PRE_SCORE_KEY = 'PreScoreTaintToleration';

export class TaintTolerationPlugin implements FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin {
  readonly name = TAINT_TOLERATION;

  filter(_state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    const taint = this.untolerated(pod, nodeInfo);
    return taint ? status('UnschedulableAndUnresolvable', ERR_REASON_UNTOLERATED) : SUCCESS;
  }

  untolerated(pod: Pod, nodeInfo: NodeInfo): Taint | undefined {
    return findMatchingUntoleratedTaint(nodeInfo.node?.spec?.taints, pod.spec.tolerations, doNotScheduleTaints);
  }

  /** The taint behind the verdict, for explain. */
  explain(_state: CycleState, pod: Pod, nodeInfo: NodeInfo): object | undefined {
    const taint = this.untolerated(pod, nodeInfo);
    return taint ? { untoleratedTaint: taint } : undefined;
  }

  /** The tolerations that can tolerate a PreferNoSchedule taint (empty effect included). */
  preScore(state: CycleState, pod: Pod): Status {
    const prefer = (pod.spec.tolerations ?? []).filter((t) => !t.effect || t.effect === 'PreferNoSchedule');
    state.write(PRE_SCORE_KEY, prefer);
    return SUCCESS;
  }

  /** countIntolerableTaintsPreferNoSchedule */
  score(state: CycleState, _pod: Pod, nodeInfo: NodeInfo): number {
    const tolerations = state.read<Toleration[]>(PRE_SCORE_KEY) ?? [];
    let n = 0;
    for (const taint of nodeInfo.node?.spec?.taints ?? []) {
      if (taint.effect === 'PreferNoSchedule' && !tolerationsTolerateTaint(tolerations, taint)) n++;
    }
    return n;
  }

  normalizeScore(_state: CycleState, _pod: Pod, scores: NodeScore[]): void {
    defaultNormalizeScore(MAX_NODE_SCORE, true, scores);
  }
}
