// What several default-profile plugins share, after upstream's plugins/helper package, v1helper's toleration checks
// and component-helpers' RequiredNodeAffinity.
import type { NodeInfo } from '../cache/node-info.ts';
import { selectorMatchesSafely } from '../cluster/label-selector.ts';
import type { LabelSelector, LabelSelectorRequirement, Node, Pod, Taint, Toleration } from '../cluster/types.ts';
import { MAX_NODE_SCORE } from '../framework/runner.ts';
import { matchNodeSelectorTerms } from '../volumes/node-affinity.ts';

export interface NodeScore {
  name: string;
  score: number;
}

/** The snapshot's nodes, for plugins whose preFilter or preScore looks at the whole cluster (upstream's lister). */
export interface NodeInfoLister {
  list(): readonly NodeInfo[];
}

/**
 * helper.DefaultNormalizeScore: scales to 0..maxPriority by the highest score (integer division, as Go's int64);
 * `reverse` turns most into least. All zero: 0 each, or maxPriority each when reversed.
 */
export function defaultNormalizeScore(maxPriority: number, reverse: boolean, scores: NodeScore[]): void {
  let max = 0;
  for (const s of scores) if (s.score > max) max = s.score;
  if (max === 0) {
    if (reverse) for (const s of scores) s.score = maxPriority;
    return;
  }
  for (const s of scores) {
    let score = Math.trunc((maxPriority * s.score) / max);
    if (reverse) score = maxPriority - score;
    s.score = score;
  }
}

export const NORMALIZED_MAX = MAX_NODE_SCORE;

/** v1.Toleration.ToleratesTaint: an empty effect or key matches any; operator Equal (default) compares values. */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  switch (t.operator ?? '') {
    case '':
    case 'Equal':
      return (t.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

export function tolerationsTolerateTaint(tolerations: readonly Toleration[] | undefined, taint: Taint): boolean {
  return (tolerations ?? []).some((t) => toleratesTaint(t, taint));
}

/** v1helper.FindMatchingUntoleratedTaint: the first taint `include` selects that no toleration tolerates. */
export function findMatchingUntoleratedTaint(
  taints: readonly Taint[] | undefined,
  tolerations: readonly Toleration[] | undefined,
  include: (t: Taint) => boolean,
): Taint | undefined {
  for (const taint of taints ?? []) {
    if (include(taint) && !tolerationsTolerateTaint(tolerations, taint)) return taint;
  }
  return undefined;
}

/** helper.DoNotScheduleTaintsFilterFunc */
export const doNotScheduleTaints = (t: Taint) => t.effect === 'NoSchedule' || t.effect === 'NoExecute';

/**
 * nodeaffinity.GetRequiredNodeAffinity(pod).Match(node): the pod's nodeSelector (every label equal) and its
 * required node affinity (terms OR'd; metadata.name as the one field). Invalid terms never match.
 */
export function requiredNodeAffinityMatches(pod: Pod, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  const selector = pod.spec.nodeSelector;
  if (selector) {
    for (const [k, v] of Object.entries(selector)) if (!Object.hasOwn(labels, k) || labels[k] !== v) return false;
  }
  const required = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required) return matchNodeSelectorTerms(required, labels, node.metadata.name);
  return true;
}

/**
 * metav1.LabelSelectorAsSelector with the keys the pod's own labels add (matchLabelKeys → In, mismatchLabelKeys →
 * NotIn, as the API server merges them): undefined selector matches nothing, an empty one everything.
 */
export function mergedSelector(
  selector: LabelSelector | null | undefined,
  podLabels: Readonly<Record<string, string>> | undefined,
  matchLabelKeys?: readonly string[] | null,
  mismatchLabelKeys?: readonly string[] | null,
): LabelSelector | undefined {
  if (!selector) return undefined;
  const extra: LabelSelectorRequirement[] = [];
  const labels = podLabels ?? {};
  for (const key of matchLabelKeys ?? [])
    if (Object.hasOwn(labels, key)) extra.push({ key, operator: 'In', values: [labels[key]] });
  for (const key of mismatchLabelKeys ?? [])
    if (Object.hasOwn(labels, key)) extra.push({ key, operator: 'NotIn', values: [labels[key]] });
  if (extra.length === 0) return selector;
  return { ...selector, matchExpressions: [...(selector.matchExpressions ?? []), ...extra] };
}

export function selectorMatches(selector: LabelSelector | undefined, labels: Record<string, string> | undefined) {
  return selector !== undefined && selectorMatchesSafely(selector, labels);
}
