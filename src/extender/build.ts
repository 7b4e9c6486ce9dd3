// The verbs' dependencies over a store: scheduler cache, nominator, volume plugins and framework, each fed by the
// store. The extender builds one over the store its source fills; analysis builds private ones over copies.
import { NodeInfoCache } from '../cache/cache.ts';
import { newNodeInfo } from '../cache/node-info.ts';
import { Nominator } from '../cache/nominator.ts';
import { podPriority } from '../cache/priority.ts';
import type { ClusterStore } from '../cluster/store.ts';
import type { ClusterWriter } from '../cluster/writer.ts';
import { Framework } from '../framework/runner.ts';
import type { Log } from '../log.ts';
import { buildVolumePlugins, type VolumePluginsSettings } from '../plugins/index.ts';
import type { ExtenderDeps } from './deps.ts';

export interface ExtenderDepsParts {
  store: ClusterStore;
  writer: ClusterWriter;
  logger: Log;
  settings: VolumePluginsSettings;
  assumedPodTTLms: number;
  /** Called with the store after the cache and nominator subscribe, before the plugins do. */
  onStore?: (store: ClusterStore) => void;
}

/** Builds the dependencies and subscribes them to the store; `stop` unsubscribes the nominator. */
export function buildExtenderDeps(parts: ExtenderDepsParts): {
  deps: ExtenderDeps;
  cache: NodeInfoCache;
  stop: () => void;
} {
  const { store, writer, logger } = parts;
  const cache = new NodeInfoCache({ assumedPodTTLms: parts.assumedPodTTLms, logger });
  cache.attach(store);
  const nominator = new Nominator(store);
  const stop = nominator.attach(store);
  parts.onStore?.(store);
  const plugins = buildVolumePlugins({ store, writer, logger }, parts.settings);
  const deps: ExtenderDeps = {
    framework: new Framework(plugins, { nominator, priorityOf: (pod) => podPriority(pod, store) }),
    cache,
    nominator,
    store,
    writer,
    logger,
    nodeInfoForUnknownNode: (node) => newNodeInfo(node),
  };
  return { deps, cache, stop };
}
