// The volume plugins in kube-scheduler's default profile order (VolumeRestrictions, NodeVolumeLimits, VolumeBinding,
// VolumeZone), built over one shared binder so that filter, prioritize and bind see the same assume caches.
import type { ClusterStore } from '../cluster/store.ts';
import type { ClusterWriter } from '../cluster/writer.ts';
import { defaultSettings, type Settings } from '../config.ts';
import type { AnyPlugin } from '../framework/interfaces.ts';
import { SchedulingState } from '../framework/scheduling-state.ts';
import type { Log } from '../log.ts';
import type { VolumeBinder } from '../volumes/binder.ts';
import { buildCapacityScorer } from '../volumes/scorer.ts';
import { ClusterVolumeBinder } from '../volumes/volume-binder.ts';
import type { PluginName } from './names.ts';
import { NODE_VOLUME_LIMITS, NodeVolumeLimitsPlugin } from './node-volume-limits.ts';
import { VOLUME_BINDING, VolumeBindingPlugin } from './volume-binding.ts';
import { VOLUME_RESTRICTIONS, VolumeRestrictionsPlugin } from './volume-restrictions.ts';
import { VOLUME_ZONE, VolumeZonePlugin } from './volume-zone.ts';

export { NODE_VOLUME_LIMITS, NodeVolumeLimitsPlugin } from './node-volume-limits.ts';
export { VOLUME_BINDING, VolumeBindingPlugin } from './volume-binding.ts';
export { VOLUME_RESTRICTIONS, VolumeRestrictionsPlugin } from './volume-restrictions.ts';
export { VOLUME_ZONE, VolumeZonePlugin } from './volume-zone.ts';

/** The settings the volume plugins read; their defaults are the settings' defaults (upstream's). */
export type VolumePluginsSettings = Pick<
  Settings,
  'disabledPlugins' | 'bindTimeoutSeconds' | 'storageScoringShape' | 'capacityAccounting'
>;

export interface VolumePluginsDeps {
  store: ClusterStore;
  writer: ClusterWriter;
  logger?: Log;
  now?: () => number;
  /** Cross-cycle state and the store subscriptions to close on shutdown; default: a private one (tests). */
  state?: SchedulingState;
  /** VolumeBinding's binder (a fake, in tests); default: one over the store (newVolumeBinder). Closed with `state`. */
  binder?: VolumeBinder;
}

/** The volume binder over the store and the API, as VolumeBinding uses it; undefined when VolumeBinding is disabled. */
export function newVolumeBinder(
  deps: Pick<VolumePluginsDeps, 'store' | 'writer' | 'logger'>,
  settings: VolumePluginsSettings = defaultSettings(),
): VolumeBinder | undefined {
  if (settings.disabledPlugins.includes(VOLUME_BINDING)) return undefined;
  return new ClusterVolumeBinder({
    store: deps.store,
    writer: deps.writer,
    logger: deps.logger,
    bindTimeoutSeconds: settings.bindTimeoutSeconds,
    capacityAccounting: settings.capacityAccounting,
  });
}

export function buildVolumePlugins(
  deps: VolumePluginsDeps,
  settings: VolumePluginsSettings = defaultSettings(),
): AnyPlugin[] {
  const enabled = (name: PluginName) => !settings.disabledPlugins.includes(name);
  const state = deps.state ?? new SchedulingState(deps.store);
  const plugins: AnyPlugin[] = [];
  if (enabled(VOLUME_RESTRICTIONS)) {
    plugins.push(new VolumeRestrictionsPlugin(deps.store, state.claimUsage));
  }
  if (enabled(NODE_VOLUME_LIMITS)) {
    const limits = new NodeVolumeLimitsPlugin(deps.store);
    state.onClose(() => limits.close());
    plugins.push(limits);
  }
  if (enabled(VOLUME_BINDING)) {
    const binder = deps.binder ?? newVolumeBinder(deps, settings)!;
    state.onClose(() => binder.close());
    const scorer = buildCapacityScorer(settings.storageScoringShape);
    plugins.push(new VolumeBindingPlugin(binder, scorer, deps.now, state));
  }
  if (enabled(VOLUME_ZONE)) plugins.push(new VolumeZonePlugin(deps.store));
  return plugins;
}
