// The framework explain and simulate run: kube-scheduler's default profile around the verbs' own volume plugins
// (shared, so the same assume caches and decisions), with the default weights, minus the plugins a request disables.
import type { ExtenderDeps } from '../extender/deps.ts';
import { Framework } from '../framework/runner.ts';
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
