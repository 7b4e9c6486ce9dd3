// Label selector matching for the simulated volume controller (cluster/ cannot import volumes/, which has its own).
import type { LabelSelector, LabelSelectorRequirement, NodeSelectorRequirement } from '../types.ts';

function requirementMatches(r: LabelSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  switch (r.operator) {
    case 'In':
      return has && (r.values ?? []).includes(labels[r.key]);
    case 'NotIn':
      return !has || !(r.values ?? []).includes(labels[r.key]);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      return false;
  }
}

/** metav1.LabelSelector semantics: every matchLabels pair and every expression must hold; `{}` matches everything. */
export function selectorMatches(selector: LabelSelector, labels: Record<string, string> = {}): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  return (selector.matchExpressions ?? []).every((r) => requirementMatches(r, labels));
}

/** The same constraint as node selector requirements, for a PV's node affinity. */
export function selectorRequirements(selector: LabelSelector): NodeSelectorRequirement[] {
  const fromLabels = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({
    key,
    operator: 'In',
    values: [value],
  }));
  const fromExpressions = (selector.matchExpressions ?? []).map((r) => ({
    key: r.key,
    operator: r.operator,
    ...(r.values ? { values: [...r.values] } : {}),
  }));
  return [...fromLabels, ...fromExpressions];
}
