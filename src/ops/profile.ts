// The framework explain and simulate run: kube-scheduler's default profile around the verbs' own volume plugins
// (shared, so the same assume caches and decisions), with the default weights, minus the plugins a request disables.
import type { NodeInfo } from '../cache/node-info.ts';
import type { Pod } from '../cluster/types.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import { Framework, MAX_EXTENDER_PRIORITY, MAX_NODE_SCORE } from '../framework/runner.ts';
import { buildDefaultProfile, cacheLister, DEFAULT_WEIGHTS } from '../plugins/default-profile.ts';
import { storeSelectorLister } from '../plugins/default-selector.ts';
import { storeNamespaceLabels } from '../plugins/inter-pod-affinity.ts';

export function defaultProfileFramework(deps: ExtenderDeps, disabledPlugins: readonly string[] = []): Framework {
  const plugins = buildDefaultProfile(
    deps.framework.plugins,
    {
      nodes: cacheLister(deps.cache),
      selectors: storeSelectorLister(deps.store),
      namespaceLabels: storeNamespaceLabels(deps.store),
    },
    disabledPlugins,
  );
  return new Framework(plugins, {
    nominator: deps.nominator,
    priorityOf: deps.framework.priorityOf,
    weights: DEFAULT_WEIGHTS,
  });
}

/** The weight given to the extender's own prioritize score, as a registration with `weight: 1` would. */
export const EXTENDER_WEIGHT = 1;

export interface SelectedHost {
  name: string;
  /** The profile's weighted score plus the extender's; 0 when only one node fit (upstream does not score then). */
  total: number;
  /** The extender's prioritize score there (0..10). */
  extender: number;
}

/**
 * kube-scheduler's selectHost over `feasible` (nodes that passed `profile`'s filters after its runPreFilter on
 * `state`): the highest weighted score, the extender's prioritize (`volumes`, the verbs' framework) added as
 * kube-scheduler adds an extender's (score × weight × 100/10). Upstream scores only when more than one node fits.
 * Ties go to the first node in `feasible`'s order, where upstream picks one at random.
 */
export function selectHost(
  profile: Framework,
  volumes: Framework,
  state: CycleState,
  pod: Pod,
  feasible: readonly NodeInfo[],
  lookup: (name: string) => NodeInfo | undefined,
): SelectedHost {
  const extender = volumes.scoreNodes(
    pod,
    feasible.map((n) => n.name),
    lookup,
  );
  let best: SelectedHost = { name: feasible[0].name, total: 0, extender: extender[0].score };
  if (feasible.length === 1) return best;
  let bestTotal = Number.NEGATIVE_INFINITY;
  profile.scoreWithWeights(state, pod, feasible).forEach((s, k) => {
    const total = s.total + extender[k].score * EXTENDER_WEIGHT * (MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY);
    if (total > bestTotal) {
      bestTotal = total;
      best = { name: s.name, total, extender: extender[k].score };
    }
  });
  return best;
}
