// The volume plugins in kube-scheduler's default profile order (VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
// VolumeZone), built over one shared binder so that filter, prioritize and bind see the same assume caches.
import type { ClusterStore } from '../cluster/store.ts';
import type { ClusterWriter } from '../cluster/writer.ts';
import type { AnyPlugin } from '../framework/interfaces.ts';
import { type BinderLogger, VolumeBinder } from '../volumes/binder.ts';
import { ClaimUsage } from '../volumes/claim-usage.ts';
import { buildCapacityScorer, type ShapePoint, shapeError } from '../volumes/scorer.ts';
import { NodeVolumeLimitsPlugin } from './node-volume-limits.ts';
import { VolumeBindingPlugin } from './volume-binding.ts';
import { VolumeRestrictionsPlugin } from './volume-restrictions.ts';
import { VolumeZonePlugin } from './volume-zone.ts';

export { NODE_VOLUME_LIMITS, NodeVolumeLimitsPlugin } from './node-volume-limits.ts';
export { VOLUME_BINDING, VolumeBindingPlugin } from './volume-binding.ts';
export { VOLUME_RESTRICTIONS, VolumeRestrictionsPlugin } from './volume-restrictions.ts';
export { VOLUME_ZONE, VolumeZonePlugin } from './volume-zone.ts';

export interface VolumePluginsConfig {
  volumeBinding: { enabled: boolean; bindTimeoutSeconds: number; shape: ShapePoint[] };
  volumeZone: { enabled: boolean };
  volumeRestrictions: { enabled: boolean };
  nodeVolumeLimits: { enabled: boolean };
}

/** Upstream defaults: bindTimeoutSeconds 600; StorageCapacityScoring's shape prefers nodes with more free space. */
export const DEFAULT_VOLUME_PLUGINS_CONFIG: VolumePluginsConfig = Object.freeze({
  volumeBinding: {
    enabled: true,
    bindTimeoutSeconds: 600,
    shape: [
      { utilization: 0, score: 10 },
      { utilization: 100, score: 0 },
    ],
  },
  volumeZone: { enabled: true },
  volumeRestrictions: { enabled: true },
  nodeVolumeLimits: { enabled: true },
});

export interface VolumePluginsDeps {
  store: ClusterStore;
  writer: ClusterWriter;
  logger?: BinderLogger;
  now?: () => number;
}

export function buildVolumePlugins(
  deps: VolumePluginsDeps,
  config: VolumePluginsConfig = DEFAULT_VOLUME_PLUGINS_CONFIG,
): AnyPlugin[] {
  const plugins: AnyPlugin[] = [];
  if (config.volumeRestrictions.enabled) {
    plugins.push(new VolumeRestrictionsPlugin(deps.store, new ClaimUsage(deps.store)));
  }
  if (config.nodeVolumeLimits.enabled) plugins.push(new NodeVolumeLimitsPlugin(deps.store));
  if (config.volumeBinding.enabled) {
    const problem = shapeError(config.volumeBinding.shape);
    if (problem) throw new Error(`volumeBinding.shape: ${problem}`);
    const binder = new VolumeBinder({
      store: deps.store,
      writer: deps.writer,
      logger: deps.logger,
      bindTimeoutSeconds: config.volumeBinding.bindTimeoutSeconds,
    });
    plugins.push(new VolumeBindingPlugin(binder, buildCapacityScorer(config.volumeBinding.shape), deps.now));
  }
  if (config.volumeZone.enabled) plugins.push(new VolumeZonePlugin(deps.store));
  return plugins;
}
