// InterPodAffinity (upstream plugins/interpodaffinity): the pod's required affinity needs a matching pod in the
// node's domain, its required anti-affinity refuses domains with one, and existing pods' required anti-affinity
// refuses the pod in their domains; preferred terms (both ways) and existing pods' required affinity score.
//
// Namespaces: a term's `namespaces`, else the pod's own; a namespaceSelector is matched against the labels of the
// Namespace the other pod is in (upstream merges the namespaces it selects into the incoming pod's terms, and matches
// existing pods' terms against the incoming pod's namespace labels: the same test). A namespace the store does not
// hold (a cluster-state file without Namespace objects) is taken to carry only the `kubernetes.io/metadata.name` label
// the API server gives every namespace.
import type { NodeInfo, PodInfo } from '../cache/node-info.ts';
import { selectorMatchesSafely } from '../cluster/label-selector.ts';
import type { ClusterStore } from '../cluster/store.ts';
import type { LabelSelector, Pod, PodAffinityTerm, WeightedPodAffinityTerm } from '../cluster/types.ts';
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
import { mergedSelector, type NodeInfoLister, selectorMatches } from './helper.ts';

export const INTER_POD_AFFINITY = 'InterPodAffinity';
export const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH =
  "node(s) didn't satisfy existing pods anti-affinity rules";
export const ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules";
export const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules";
/** KubeSchedulerConfiguration's InterPodAffinityArgs.hardPodAffinityWeight default. */
export const HARD_POD_AFFINITY_WEIGHT = 1;
const PRE_FILTER_KEY = 'PreFilterInterPodAffinity';
const PRE_SCORE_KEY = 'PreScoreInterPodAffinity';
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

interface AffinityTerm {
  namespaces: ReadonlySet<string>;
  namespaceSelector: LabelSelector | undefined;
  selector: LabelSelector | undefined;
  topologyKey: string;
}

function term(owner: Pod, t: PodAffinityTerm): AffinityTerm {
  const ns = owner.metadata.namespace ?? 'default';
  const namespaces = new Set(t.namespaces ?? []);
  if (namespaces.size === 0 && !t.namespaceSelector) namespaces.add(ns);
  return {
    namespaces,
    namespaceSelector: t.namespaceSelector ?? undefined,
    selector: mergedSelector(t.labelSelector, owner.metadata.labels, t.matchLabelKeys, t.mismatchLabelKeys),
    topologyKey: t.topologyKey,
  };
}

/** A namespace's labels by its name (upstream's Namespace lister, GetNamespaceLabelsSnapshot). */
export type NamespaceLabels = (namespace: string) => Readonly<Record<string, string>>;

/** Without Namespace objects: the label the API server sets on every namespace. */
export const namespaceNameLabel: NamespaceLabels = (namespace) => ({ [NAMESPACE_NAME_LABEL]: namespace });

/** The store's Namespace objects' labels; a namespace it does not hold has only its name label. */
export function storeNamespaceLabels(store: ClusterStore): NamespaceLabels {
  return (namespace) => store.get('Namespace', namespace)?.metadata.labels ?? namespaceNameLabel(namespace);
}

/** AffinityTerm.Matches */
function matches(t: AffinityTerm, pod: Pod, namespaceLabels: NamespaceLabels): boolean {
  const ns = pod.metadata.namespace ?? 'default';
  const inNamespace =
    t.namespaces.has(ns) ||
    (t.namespaceSelector !== undefined && selectorMatchesSafely(t.namespaceSelector, namespaceLabels(ns)));
  return inNamespace && selectorMatches(t.selector, pod.metadata.labels);
}

const required = (owner: Pod, terms: readonly PodAffinityTerm[] | undefined) =>
  (terms ?? []).map((t) => term(owner, t));
const weighted = (owner: Pod, terms: readonly WeightedPodAffinityTerm[] | undefined) =>
  (terms ?? []).map((t) => ({ weight: t.weight, term: term(owner, t.podAffinityTerm) }));

/** "key\0value" → count */
type TopologyCounts = Map<string, number>;
const pair = (key: string, value: string) => `${key}\0${value}`;
function add(counts: TopologyCounts, key: string, value: string, n: number) {
  counts.set(pair(key, value), (counts.get(pair(key, value)) ?? 0) + n);
}

interface FilterState {
  affinity: AffinityTerm[];
  antiAffinity: AffinityTerm[];
  affinityCounts: TopologyCounts;
  antiAffinityCounts: TopologyCounts;
  existingAntiAffinityCounts: TopologyCounts;
  /** The pod matches its own affinity terms (the first pod of a group may go anywhere). */
  matchesOwnAffinity: boolean;
}

export class InterPodAffinityPlugin
  implements PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin
{
  readonly name = INTER_POD_AFFINITY;
  readonly #nodes: NodeInfoLister;
  readonly #hardPodAffinityWeight: number;
  readonly #namespaceLabels: NamespaceLabels;

  constructor(
    nodes: NodeInfoLister,
    hardPodAffinityWeight = HARD_POD_AFFINITY_WEIGHT,
    namespaceLabels: NamespaceLabels = namespaceNameLabel,
  ) {
    this.#nodes = nodes;
    this.#hardPodAffinityWeight = hardPodAffinityWeight;
    this.#namespaceLabels = namespaceLabels;
  }

  preFilter(state: CycleState, pod: Pod): Status {
    const all = this.#nodes.list();
    const affinity = required(pod, pod.spec.affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution);
    const antiAffinity = required(
      pod,
      pod.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
    );
    const withAntiAffinity = all.filter((n) => (n.podsWithRequiredAntiAffinity?.size ?? 0) > 0);
    if (affinity.length === 0 && antiAffinity.length === 0 && withAntiAffinity.length === 0) return SKIP;
    const s: FilterState = {
      affinity,
      antiAffinity,
      affinityCounts: new Map(),
      antiAffinityCounts: new Map(),
      existingAntiAffinityCounts: new Map(),
      matchesOwnAffinity: affinity.every((t) => matches(t, pod, this.#namespaceLabels)),
    };
    // Existing pods whose required anti-affinity matches the incoming pod: their domains are closed to it.
    for (const info of withAntiAffinity) {
      const labels = info.node?.metadata.labels ?? {};
      for (const { pod: existing } of info.podsWithRequiredAntiAffinity?.values() ?? []) {
        const terms = required(
          existing,
          existing.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
        );
        for (const t of terms) {
          if (Object.hasOwn(labels, t.topologyKey) && matches(t, pod, this.#namespaceLabels))
            add(s.existingAntiAffinityCounts, t.topologyKey, labels[t.topologyKey], 1);
        }
      }
    }
    // The incoming pod's terms against every existing pod.
    if (affinity.length > 0 || antiAffinity.length > 0) {
      for (const info of all) {
        const labels = info.node?.metadata.labels ?? {};
        for (const { pod: existing } of info.pods.values()) {
          if (affinity.length > 0 && affinity.every((t) => matches(t, existing, this.#namespaceLabels))) {
            for (const t of affinity)
              if (Object.hasOwn(labels, t.topologyKey)) add(s.affinityCounts, t.topologyKey, labels[t.topologyKey], 1);
          }
          for (const t of antiAffinity) {
            if (Object.hasOwn(labels, t.topologyKey) && matches(t, existing, this.#namespaceLabels))
              add(s.antiAffinityCounts, t.topologyKey, labels[t.topologyKey], 1);
          }
        }
      }
    }
    state.write(PRE_FILTER_KEY, s);
    return SUCCESS;
  }

  filter(state: CycleState, _pod: Pod, nodeInfo: NodeInfo): Status {
    const s = state.read<FilterState>(PRE_FILTER_KEY);
    if (!s) return SUCCESS;
    const labels = nodeInfo.node?.metadata.labels ?? {};
    if (!satisfyPodAffinity(s, labels))
      return status('UnschedulableAndUnresolvable', ERR_REASON_AFFINITY_RULES_NOT_MATCH);
    if (!satisfyPodAntiAffinity(s, labels)) return status('Unschedulable', ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
    if (!satisfyExistingPodsAntiAffinity(s, labels))
      return status('Unschedulable', ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
    return SUCCESS;
  }

  /** Scoring state: topology pair → summed weights (upstream preScoreState.topologyScore). */
  preScore(state: CycleState, pod: Pod, nodes: readonly NodeInfo[]): Status {
    if (nodes.length === 0) return SKIP;
    const preferredAffinity = weighted(
      pod,
      pod.spec.affinity?.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution,
    );
    const preferredAnti = weighted(
      pod,
      pod.spec.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution,
    );
    const hasConstraints = preferredAffinity.length > 0 || preferredAnti.length > 0;
    const all = this.#nodes.list();
    // Without preferred terms of its own, only existing pods with affinity can change a score.
    if (!hasConstraints && all.every((n) => (n.podsWithAffinity?.size ?? 0) === 0)) return SKIP;
    const scores: TopologyCounts = new Map();
    const credit = (t: AffinityTerm, labels: Record<string, string>, w: number) => {
      if (Object.hasOwn(labels, t.topologyKey)) add(scores, t.topologyKey, labels[t.topologyKey], w);
    };
    for (const info of all) {
      const labels = info.node?.metadata.labels ?? {};
      const pods: Iterable<PodInfo> = hasConstraints ? info.pods.values() : (info.podsWithAffinity?.values() ?? []);
      for (const { pod: existing } of pods) {
        for (const { weight, term: t } of preferredAffinity)
          if (matches(t, existing, this.#namespaceLabels)) credit(t, labels, weight);
        for (const { weight, term: t } of preferredAnti)
          if (matches(t, existing, this.#namespaceLabels)) credit(t, labels, -weight);
        const a = existing.spec.affinity;
        if (!a?.podAffinity && !a?.podAntiAffinity) continue;
        if (this.#hardPodAffinityWeight > 0)
          for (const t of required(existing, a.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution))
            if (matches(t, pod, this.#namespaceLabels)) credit(t, labels, this.#hardPodAffinityWeight);
        for (const { weight, term: t } of weighted(
          existing,
          a.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution,
        ))
          if (matches(t, pod, this.#namespaceLabels)) credit(t, labels, weight);
        for (const { weight, term: t } of weighted(
          existing,
          a.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution,
        ))
          if (matches(t, pod, this.#namespaceLabels)) credit(t, labels, -weight);
      }
    }
    state.write(PRE_SCORE_KEY, scores);
    return SUCCESS;
  }

  score(state: CycleState, _pod: Pod, nodeInfo: NodeInfo): number {
    const scores = state.read<TopologyCounts>(PRE_SCORE_KEY);
    if (!scores || scores.size === 0) return 0;
    let sum = 0;
    for (const [key, value] of Object.entries(nodeInfo.node?.metadata.labels ?? {}))
      sum += scores.get(pair(key, value)) ?? 0;
    return sum;
  }

  normalizeScore(state: CycleState, _pod: Pod, scores: NodeScore[]): void {
    if ((state.read<TopologyCounts>(PRE_SCORE_KEY)?.size ?? 0) === 0) return;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (const s of scores) {
      if (s.score > max) max = s.score;
      if (s.score < min) min = s.score;
    }
    const diff = max - min;
    // float64(MaxNodeScore) * (float64(score-min) / float64(diff)), truncated: 100*29/100 is 28 this way.
    for (const s of scores) s.score = diff > 0 ? Math.trunc(MAX_NODE_SCORE * ((s.score - min) / diff)) : 0;
  }

  explain(state: CycleState, _pod: Pod, nodeInfo: NodeInfo): object | undefined {
    const s = state.read<FilterState>(PRE_FILTER_KEY);
    if (!s) return undefined;
    const labels = nodeInfo.node?.metadata.labels ?? {};
    const domains = (terms: AffinityTerm[], counts: TopologyCounts) =>
      terms.map((t) => ({
        topologyKey: t.topologyKey,
        value: labels[t.topologyKey] ?? null,
        matchingPods: Object.hasOwn(labels, t.topologyKey)
          ? (counts.get(pair(t.topologyKey, labels[t.topologyKey])) ?? 0)
          : 0,
      }));
    const existing = Object.entries(labels)
      .filter(([k, v]) => (s.existingAntiAffinityCounts.get(pair(k, v)) ?? 0) > 0)
      .map(([k, v]) => ({ topologyKey: k, value: v, pods: s.existingAntiAffinityCounts.get(pair(k, v)) }));
    return {
      affinity: domains(s.affinity, s.affinityCounts),
      antiAffinity: domains(s.antiAffinity, s.antiAffinityCounts),
      existingAntiAffinity: existing,
    };
  }
}

function satisfyPodAffinity(s: FilterState, labels: Record<string, string>): boolean {
  let podsExist = true;
  for (const t of s.affinity) {
    if (!Object.hasOwn(labels, t.topologyKey)) return false;
    if ((s.affinityCounts.get(pair(t.topologyKey, labels[t.topologyKey])) ?? 0) <= 0) podsExist = false;
  }
  if (podsExist) return true;
  // The first pod of a group with affinity to itself: allowed when no pod anywhere matches and it matches itself.
  return s.affinityCounts.size === 0 && s.matchesOwnAffinity;
}

function satisfyPodAntiAffinity(s: FilterState, labels: Record<string, string>): boolean {
  if (s.antiAffinityCounts.size === 0) return true;
  for (const t of s.antiAffinity) {
    if (
      Object.hasOwn(labels, t.topologyKey) &&
      (s.antiAffinityCounts.get(pair(t.topologyKey, labels[t.topologyKey])) ?? 0) > 0
    )
      return false;
  }
  return true;
}

function satisfyExistingPodsAntiAffinity(s: FilterState, labels: Record<string, string>): boolean {
  if (s.existingAntiAffinityCounts.size === 0) return true;
  for (const [k, v] of Object.entries(labels))
    if ((s.existingAntiAffinityCounts.get(pair(k, v)) ?? 0) > 0) return false;
  return true;
}
