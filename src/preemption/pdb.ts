// PodDisruptionBudget accounting of preemption (upstream default_preemption.go filterPodsWithPDBViolation): victims
// are taken most important first; each PDB of the victim's namespace whose selector matches the victim's labels
// gives up one of its `disruptionsAllowed`, unless the victim is already in the PDB's `disruptedPods`; a budget
// going below zero makes the victim a violation.
import { selectorMatchesSafely } from '../cluster/label-selector.ts';
import { namespaceOf, type Pod, type PodDisruptionBudget } from '../cluster/types.ts';

/** A nil or empty selector matches nothing (upstream LabelSelectorAsSelector(nil) and selector.Empty()). */
function selects(pdb: PodDisruptionBudget, pod: Pod): boolean {
  const s = pdb.spec.selector;
  if (!s || ((s.matchLabels === undefined || Object.keys(s.matchLabels).length === 0) && !s.matchExpressions?.length)) {
    return false;
  }
  return selectorMatchesSafely(s, pod.metadata.labels);
}

/** Splits pods (already ordered most important first) into those whose eviction violates a PDB and the others. */
export function splitByPDBViolation(
  pods: readonly Pod[],
  pdbs: readonly PodDisruptionBudget[],
): { violating: Pod[]; nonViolating: Pod[] } {
  const allowed = pdbs.map((pdb) => pdb.status?.disruptionsAllowed ?? 0);
  const violating: Pod[] = [];
  const nonViolating: Pod[] = [];
  for (const pod of pods) {
    let violated = false;
    // A pod without labels matches no PDB.
    if (pod.metadata.labels && Object.keys(pod.metadata.labels).length > 0) {
      pdbs.forEach((pdb, i) => {
        if (namespaceOf(pdb) !== namespaceOf(pod)) return;
        if (!selects(pdb, pod)) return;
        // Already processed by the API server: not a violation, and the budget is not decremented twice.
        if (pdb.status?.disruptedPods && Object.hasOwn(pdb.status.disruptedPods, pod.metadata.name)) return;
        allowed[i]!--;
        if (allowed[i]! < 0) violated = true;
      });
    }
    (violated ? violating : nonViolating).push(pod);
  }
  return { violating, nonViolating };
}

/** NumPDBViolations of evicting exactly these victims (ordered most important first). */
export function countPDBViolations(victims: readonly Pod[], pdbs: readonly PodDisruptionBudget[]): number {
  return splitByPDBViolation(victims, pdbs).violating.length;
}
