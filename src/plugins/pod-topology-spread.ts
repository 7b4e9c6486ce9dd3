// PodTopologySpread (upstream plugins/podtopologyspread): DoNotSchedule constraints keep the number of matching
// pods per topology domain within maxSkew of the emptiest eligible domain (filter); ScheduleAnyway constraints
// prefer the domains with fewer (score). Eligible nodes follow nodeAffinityPolicy (Honor by default: only nodes the
// pod's nodeSelector/affinity admits) and nodeTaintsPolicy (Ignore by default), and must carry every constraint's key.
//
// A pod without constraints of its own gets kube-scheduler's system defaults (defaultingType System): ScheduleAnyway
// by hostname (maxSkew 3) and by zone (maxSkew 5), over the pods of the Services and the controller that manage it
// (default-selector.ts). They only score, and as upstream's systemDefaulted spreading they do not require every
// topology key: nodes without a zone label are scored by hostname alone and count together as the zone "".
import type { NodeInfo } from '../cache/node-info.ts';
import type { LabelSelector, Node, Pod, TopologySpreadConstraint } from '../cluster/types.ts';
import { LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE } from '../cluster/well-known-labels.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type FilterPlugin,
  type NodeScore,
  type NormalizeScorePlugin,
  type PreFilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
  SKIP,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import { MAX_NODE_SCORE } from '../framework/runner.ts';
import { defaultSelector, type SpreadSelectorLister } from './default-selector.ts';
import {
  doNotScheduleTaints,
  findMatchingUntoleratedTaint,
  mergedSelector,
  type NodeInfoLister,
  requiredNodeAffinityMatches,
  selectorMatches,
} from './helper.ts';

export const POD_TOPOLOGY_SPREAD = 'PodTopologySpread';
export const ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints";
export const ERR_REASON_NODE_LABEL_NOT_MATCH = `${ERR_REASON_CONSTRAINTS_NOT_MATCH} (missing required label)`;
const PRE_FILTER_KEY = 'PreFilterPodTopologySpread';
const PRE_SCORE_KEY = 'PreScorePodTopologySpread';

interface Constraint {
  maxSkew: number;
  topologyKey: string;
  selector: LabelSelector | undefined;
  minDomains: number;
  honorNodeAffinity: boolean;
  honorTaints: boolean;
}

function constraintsOf(pod: Pod, when: string): Constraint[] {
  return (pod.spec.topologySpreadConstraints ?? [])
    .filter((c: TopologySpreadConstraint) => c.whenUnsatisfiable === when)
    .map((c) => ({
      maxSkew: c.maxSkew,
      topologyKey: c.topologyKey,
      selector: mergedSelector(c.labelSelector, pod.metadata.labels, c.matchLabelKeys),
      minDomains: c.minDomains ?? 1,
      honorNodeAffinity: (c.nodeAffinityPolicy ?? 'Honor') === 'Honor',
      honorTaints: c.nodeTaintsPolicy === 'Honor',
    }));
}

/** systemDefaultConstraints (plugin.go), with the selector the pod's Services and controller give. */
function systemDefaultConstraints(selector: LabelSelector): Constraint[] {
  const base = { selector, minDomains: 1, honorNodeAffinity: true, honorTaints: false };
  return [
    { ...base, maxSkew: 3, topologyKey: LABEL_HOSTNAME },
    { ...base, maxSkew: 5, topologyKey: LABEL_TOPOLOGY_ZONE },
  ];
}

function hasAllKeys(node: Node, constraints: readonly Constraint[]): boolean {
  const labels = node.metadata.labels ?? {};
  return constraints.every((c) => Object.hasOwn(labels, c.topologyKey));
}

/** matchNodeInclusionPolicies */
function nodeIncluded(c: Constraint, pod: Pod, node: Node): boolean {
  if (c.honorNodeAffinity && !requiredNodeAffinityMatches(pod, node)) return false;
  if (c.honorTaints && findMatchingUntoleratedTaint(node.spec?.taints, pod.spec.tolerations, doNotScheduleTaints))
    return false;
  return true;
}

/** labels.Selector.Empty(): no requirements at all, which is what `labelSelector: {}` parses to. */
const selectsEverything = (s: LabelSelector | undefined) =>
  s !== undefined && Object.keys(s.matchLabels ?? {}).length === 0 && (s.matchExpressions ?? []).length === 0;

/**
 * countPodsMatchSelector: the pod's namespace, not terminating, labels matching. Since v1.27 a selector without
 * requirements counts nothing (meant to skip the null selector, it catches `{}` instead; fixed only after v1.35,
 * kubernetes#141339), although the incoming pod still matches it itself.
 */
function countMatching(nodeInfo: NodeInfo, selector: LabelSelector | undefined, namespace: string): number {
  if (selectsEverything(selector)) return 0;
  let n = 0;
  for (const { pod } of nodeInfo.pods.values()) {
    if (pod.metadata.deletionTimestamp || (pod.metadata.namespace ?? 'default') !== namespace) continue;
    if (selectorMatches(selector, pod.metadata.labels)) n++;
  }
  return n;
}

interface FilterState {
  constraints: Constraint[];
  /** Per constraint: domain value → matching pods. */
  counts: Map<string, number>[];
}

export class PodTopologySpreadPlugin
  implements PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin
{
  readonly name = POD_TOPOLOGY_SPREAD;
  readonly #nodes: NodeInfoLister;
  readonly #selectors: SpreadSelectorLister | undefined;

  /** With `selectors`, the system default constraints apply (kube-scheduler's default); without, none do. */
  constructor(nodes: NodeInfoLister, selectors?: SpreadSelectorLister) {
    this.#nodes = nodes;
    this.#selectors = selectors;
  }

  /** The pod's ScheduleAnyway constraints, or the system defaults when it has no constraints at all. */
  #scoringConstraints(pod: Pod): { constraints: Constraint[]; systemDefaulted: boolean } {
    if ((pod.spec.topologySpreadConstraints ?? []).length > 0 || !this.#selectors)
      return { constraints: constraintsOf(pod, 'ScheduleAnyway'), systemDefaulted: false };
    const selector = defaultSelector(pod, this.#selectors);
    return { constraints: selector ? systemDefaultConstraints(selector) : [], systemDefaulted: true };
  }

  preFilter(state: CycleState, pod: Pod): Status {
    const constraints = constraintsOf(pod, 'DoNotSchedule');
    if (constraints.length === 0) return SKIP;
    const ns = pod.metadata.namespace ?? 'default';
    const counts = constraints.map(() => new Map<string, number>());
    for (const info of this.#nodes.list()) {
      const node = info.node;
      if (!node || !hasAllKeys(node, constraints)) continue;
      constraints.forEach((c, i) => {
        if (!nodeIncluded(c, pod, node)) return;
        const value = node.metadata.labels![c.topologyKey];
        counts[i].set(value, (counts[i].get(value) ?? 0) + countMatching(info, c.selector, ns));
      });
    }
    state.write(PRE_FILTER_KEY, { constraints, counts } satisfies FilterState);
    return SUCCESS;
  }

  /** Per violated constraint, the numbers behind it (for explain and the filter). */
  #skews(state: CycleState, pod: Pod, nodeInfo: NodeInfo) {
    const s = state.read<FilterState>(PRE_FILTER_KEY);
    const labels = nodeInfo.node?.metadata.labels ?? {};
    const out: { topologyKey: string; value?: string; skew?: number; maxSkew: number; globalMin?: number }[] = [];
    if (!s) return out;
    s.constraints.forEach((c, i) => {
      if (!Object.hasOwn(labels, c.topologyKey)) {
        out.push({ topologyKey: c.topologyKey, maxSkew: c.maxSkew });
        return;
      }
      const domains = s.counts[i];
      // The emptiest domain, or 0 while fewer domains than minDomains exist.
      let min = domains.size < c.minDomains || domains.size === 0 ? 0 : Number.POSITIVE_INFINITY;
      for (const n of domains.values()) if (n < min) min = n;
      const value = labels[c.topologyKey];
      const self = selectorMatches(c.selector, pod.metadata.labels) ? 1 : 0;
      const skew = (domains.get(value) ?? 0) + self - min;
      if (skew > c.maxSkew) out.push({ topologyKey: c.topologyKey, value, skew, maxSkew: c.maxSkew, globalMin: min });
    });
    return out;
  }

  filter(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    const bad = this.#skews(state, pod, nodeInfo);
    if (bad.length === 0) return SUCCESS;
    // Upstream stops at the first violated constraint, in the pod's order.
    return bad[0].skew === undefined
      ? status('UnschedulableAndUnresolvable', ERR_REASON_NODE_LABEL_NOT_MATCH)
      : status('Unschedulable', ERR_REASON_CONSTRAINTS_NOT_MATCH);
  }

  explain(state: CycleState, pod: Pod, nodeInfo: NodeInfo): object | undefined {
    const bad = this.#skews(state, pod, nodeInfo);
    return bad.length > 0 ? { violatedConstraints: bad } : undefined;
  }

  preScore(state: CycleState, pod: Pod, nodes: readonly NodeInfo[]): Status {
    const { constraints, systemDefaulted } = this.#scoringConstraints(pod);
    if (constraints.length === 0 || nodes.length === 0) return SKIP;
    // Upstream's requireAllTopologies: only the system defaults let a node without a zone label be scored by hostname.
    const requireAll = !systemDefaulted;
    const ignored = new Set<string>();
    const counts = constraints.map(() => new Map<string, number>());
    for (const info of nodes) {
      const node = info.node;
      if (!node || (requireAll && !hasAllKeys(node, constraints))) {
        ignored.add(info.name);
        continue;
      }
      constraints.forEach((c, i) => {
        if (c.topologyKey !== LABEL_HOSTNAME) counts[i].set(node.metadata.labels?.[c.topologyKey] ?? '', 0);
      });
    }
    const weights = constraints.map((c, i) =>
      Math.log((c.topologyKey === LABEL_HOSTNAME ? nodes.length - ignored.size : counts[i].size) + 2),
    );
    const ns = pod.metadata.namespace ?? 'default';
    for (const info of this.#nodes.list()) {
      const node = info.node;
      if (!node || (requireAll && !hasAllKeys(node, constraints))) continue;
      constraints.forEach((c, i) => {
        if (!nodeIncluded(c, pod, node)) return;
        const value = node.metadata.labels?.[c.topologyKey] ?? '';
        const current = counts[i].get(value);
        if (current === undefined) return;
        counts[i].set(value, current + countMatching(info, c.selector, ns));
      });
    }
    state.write(PRE_SCORE_KEY, { constraints, counts, ignored, weights, ns });
    return SUCCESS;
  }

  score(state: CycleState, _pod: Pod, nodeInfo: NodeInfo): number {
    const s = state.read<{
      constraints: Constraint[];
      counts: Map<string, number>[];
      ignored: Set<string>;
      weights: number[];
      ns: string;
    }>(PRE_SCORE_KEY);
    if (!s || s.ignored.has(nodeInfo.name)) return 0;
    const labels = nodeInfo.node?.metadata.labels ?? {};
    let score = 0;
    s.constraints.forEach((c, i) => {
      if (!Object.hasOwn(labels, c.topologyKey)) return;
      const count =
        c.topologyKey === LABEL_HOSTNAME
          ? countMatching(nodeInfo, c.selector, s.ns)
          : (s.counts[i].get(labels[c.topologyKey]) ?? 0);
      score += count * s.weights[i] + (c.maxSkew - 1);
    });
    return Math.round(score);
  }

  /** Fewer matching pods score higher; nodes missing a key score 0. */
  normalizeScore(state: CycleState, _pod: Pod, scores: NodeScore[]): void {
    const ignored = state.read<{ ignored: Set<string> }>(PRE_SCORE_KEY)?.ignored ?? new Set<string>();
    let min = Number.MAX_SAFE_INTEGER;
    let max = 0;
    for (const s of scores) {
      if (ignored.has(s.name)) continue;
      if (s.score < min) min = s.score;
      if (s.score > max) max = s.score;
    }
    for (const s of scores) {
      if (ignored.has(s.name)) s.score = 0;
      else if (max === 0) s.score = MAX_NODE_SCORE;
      else s.score = Math.trunc((MAX_NODE_SCORE * (max + min - s.score)) / max);
    }
  }
}
