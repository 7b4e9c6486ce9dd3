// The verbs' dependencies over a store: scheduler cache, nominator, volume plugins and framework, each fed by the
// store. The extender builds one over the store its source fills; analysis builds private ones over copies.
import { NodeInfoCache } from '../cache/cache.ts';
import { newNodeInfo } from '../cache/node-info.ts';
import { podPriority } from '../cache/priority.ts';
import type { KindStatus } from '../cluster/source.ts';
import type { ClusterStore } from '../cluster/store.ts';
import type { ClusterWriter } from '../cluster/writer.ts';
import { Framework } from '../framework/runner.ts';
import { SchedulingState } from '../framework/scheduling-state.ts';
import type { Log } from '../log.ts';
import { buildVolumePlugins, newVolumeBinder, type VolumePluginsSettings } from '../plugins/index.ts';
import type { ExtenderDeps } from './deps.ts';

export interface ExtenderDepsParts {
  store: ClusterStore;
  writer: ClusterWriter;
  logger: Log;
  settings: VolumePluginsSettings;
  assumedPodTTLms: number;
  /** Called with the store after the cache subscribes, before the scheduling state and the plugins do. */
  onStore?: (store: ClusterStore) => void;
  /** The source's per-kind health (a live source may serve without the analysis-only kinds). */
  sourceStatus?: () => readonly KindStatus[];
  /** The API server's release (e.g. v1.37.2), once known: explain names the cluster's kube-scheduler minor. */
  clusterVersion?: () => string | undefined;
  /** See ExtenderDeps.delegatedVolumeBinding. */
  delegatedVolumeBinding?: boolean;
  /** See ExtenderDeps.clusterStateFile. */
  clusterStateFile?: string;
}

/**
 * Builds the dependencies and subscribes them to the store. What outlives a scheduling cycle (nominations, binding
 * decisions, bind reservations, claim usage) lives in one SchedulingState; `stop` closes it and with it every store
 * subscription of the nominator and the plugins.
 */
export function buildExtenderDeps(parts: ExtenderDepsParts): {
  deps: ExtenderDeps;
  cache: NodeInfoCache;
  stop: () => void;
} {
  const { store, writer, logger } = parts;
  const cache = new NodeInfoCache({ assumedPodTTLms: parts.assumedPodTTLms, logger });
  cache.attach(store);
  parts.onStore?.(store);
  const state = new SchedulingState(store);
  const volumeBinder = newVolumeBinder({ store, writer, logger }, parts.settings);
  const plugins = buildVolumePlugins({ store, writer, logger, state, binder: volumeBinder }, parts.settings);
  const { nominator } = state;
  const deps: ExtenderDeps = {
    framework: new Framework(plugins, { nominator, priorityOf: (pod) => podPriority(pod, store) }),
    cache,
    nominator,
    store,
    writer,
    logger,
    nodeInfoForUnknownNode: (node) => newNodeInfo(node),
    volumeBinder,
    sourceStatus: parts.sourceStatus,
    clusterVersion: parts.clusterVersion,
    delegatedVolumeBinding: parts.delegatedVolumeBinding,
    clusterStateFile: parts.clusterStateFile,
  };
  return { deps, cache, stop: () => state.close() };
}
