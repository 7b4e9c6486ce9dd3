// A CSIStorageCapacity's label selector as the node affinity of the PV the simulated provisioner creates.
import type { LabelSelector, NodeSelectorRequirement } from '../types.ts';

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
