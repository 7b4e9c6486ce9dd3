// The volume plugins by kube-scheduler's own names (as KubeSchedulerConfiguration and its logs spell them), in its
// default profile order. Each name is defined beside its plugin class; the kebab-case spellings of earlier releases
// (volume-binding, ...) are accepted as aliases wherever a setting names a plugin.
import { NODE_VOLUME_LIMITS } from './node-volume-limits.ts';
import { VOLUME_BINDING } from './volume-binding.ts';
import { VOLUME_RESTRICTIONS } from './volume-restrictions.ts';
import { VOLUME_ZONE } from './volume-zone.ts';

export const PLUGIN_NAMES = [VOLUME_RESTRICTIONS, NODE_VOLUME_LIMITS, VOLUME_BINDING, VOLUME_ZONE] as const;
export type PluginName = (typeof PLUGIN_NAMES)[number];

const kebab = (name: string) => name.replace(/[A-Z]/g, (c, i) => `${i === 0 ? '' : '-'}${c.toLowerCase()}`);
const BY_ALIAS = new Map<string, PluginName>(PLUGIN_NAMES.map((n) => [kebab(n), n]));

/** "volume-binding" → "VolumeBinding"; anything else as given, for the setting's check to accept or refuse. */
export function canonicalPluginName(name: unknown): unknown {
  return typeof name === 'string' ? (BY_ALIAS.get(name) ?? name) : name;
}
