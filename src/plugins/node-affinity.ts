// NodeAffinity (upstream plugins/nodeaffinity): the pod's nodeSelector and required node affinity must match the
// node; preferred terms score by the sum of the weights that match. Terms naming nodes by metadata.name narrow the
// nodes filtered at all (upstream's PreFilterResult): the others count as `didn't satisfy plugin(s) [NodeAffinity]`.
import type { NodeInfo } from '../cache/node-info.ts';
import type { Pod, PreferredSchedulingTerm } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type FilterPlugin,
  type NodeScore,
  type NormalizeScorePlugin,
  type PreFilterPlugin,
  type PreFilterResultPlugin,
  type PreScorePlugin,
  type ScorePlugin,
  SKIP,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import { MAX_NODE_SCORE } from '../framework/runner.ts';
import { matchNodeSelectorTerms } from '../volumes/node-affinity.ts';
import { defaultNormalizeScore, requiredNodeAffinityMatches } from './helper.ts';

export const NODE_AFFINITY = 'NodeAffinity';
export const ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector";
export const ERR_REASON_CONFLICT = 'pod affinity terms conflict';
const PRE_FILTER_KEY = 'PreFilterNodeAffinity';
const PRE_SCORE_KEY = 'PreScoreNodeAffinity';

export class NodeAffinityPlugin
  implements PreFilterPlugin, PreFilterResultPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin
{
  readonly name = NODE_AFFINITY;

  preFilter(state: CycleState, pod: Pod): Status {
    const required = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
    if (!required && !pod.spec.nodeSelector) return SKIP;
    const terms = required?.nodeSelectorTerms ?? [];
    // Terms are OR'd; metadata.name In requirements within a term AND'ed: the union of their intersections, unless
    // some term does not name nodes (then any node may match).
    let names: Set<string> | undefined;
    for (const term of terms) {
      let own: Set<string> | undefined;
      for (const r of term.matchFields ?? []) {
        if (r.key !== 'metadata.name' || r.operator !== 'In') continue;
        const values = new Set(r.values ?? []);
        own = own ? new Set([...own].filter((n) => values.has(n))) : values;
      }
      if (!own) {
        names = undefined;
        break;
      }
      names = new Set([...(names ?? []), ...own]);
    }
    if (names && names.size === 0) return status('UnschedulableAndUnresolvable', ERR_REASON_CONFLICT);
    state.write(PRE_FILTER_KEY, names);
    return SUCCESS;
  }

  preFilterResult(state: CycleState): ReadonlySet<string> | undefined {
    return state.read<Set<string>>(PRE_FILTER_KEY);
  }

  filter(_state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    const node = nodeInfo.node;
    if (node && requiredNodeAffinityMatches(pod, node)) return SUCCESS;
    return status('UnschedulableAndUnresolvable', ERR_REASON_POD);
  }

  preScore(state: CycleState, pod: Pod): Status {
    const preferred = pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    if (preferred.length === 0) return SKIP;
    state.write(PRE_SCORE_KEY, preferred);
    return SUCCESS;
  }

  score(state: CycleState, _pod: Pod, nodeInfo: NodeInfo): number {
    const preferred = state.read<PreferredSchedulingTerm[]>(PRE_SCORE_KEY) ?? [];
    const node = nodeInfo.node;
    let sum = 0;
    for (const t of preferred) {
      // A zero weight is ignored; each term is matched on its own (upstream PreferredSchedulingTerms).
      if (t.weight === 0 || !node) continue;
      if (matchNodeSelectorTerms({ nodeSelectorTerms: [t.preference] }, node.metadata.labels, node.metadata.name))
        sum += t.weight;
    }
    return sum;
  }

  normalizeScore(_state: CycleState, _pod: Pod, scores: NodeScore[]): void {
    defaultNormalizeScore(MAX_NODE_SCORE, false, scores);
  }
}
