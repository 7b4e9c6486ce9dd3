// A private copy of the extender's state for analysis: its own store, scheduler cache, nominator and volume plugins,
// filled from a copy of the objects the extender holds. What a simulation assumes there is never written to the
// cluster and never seen by the verbs.
import { pino } from 'pino';
import { ClusterStore } from '../cluster/store.ts';
import { type AnyObject, KINDS, type Kind, type KindMap } from '../cluster/types.ts';
import type { ClusterWriter } from '../cluster/writer.ts';
import { buildExtenderDeps } from '../extender/build.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { VolumePluginsSettings } from '../plugins/index.ts';

/** A writer for a state no one may write to: analysis changes its private store directly. */
const READ_ONLY: ClusterWriter = {
  bindPod: () => Promise.reject(new Error('analysis never binds')),
  nominatePod: () => Promise.reject(new Error('analysis never nominates')),
  updatePersistentVolume: () => Promise.reject(new Error('analysis never writes')),
  updatePersistentVolumeClaim: () => Promise.reject(new Error('analysis never writes')),
  unbindPersistentVolume: () => Promise.reject(new Error('analysis never writes')),
  bindClaimToVolume: () => Promise.reject(new Error('analysis never writes')),
  getPod: async () => undefined,
  getPersistentVolume: async () => undefined,
  getPersistentVolumeClaim: async () => undefined,
};

export interface WhatIf {
  store: ClusterStore;
  deps: ExtenderDeps;
}

/** Verbs' dependencies over a fresh store holding `objects` (each kind's list, in order), with these plugin settings. */
export function whatIf(objects: (kind: Kind) => Iterable<AnyObject>, settings: VolumePluginsSettings): WhatIf {
  const store = new ClusterStore();
  const { deps } = buildExtenderDeps({
    store,
    writer: READ_ONLY,
    logger: pino({ level: 'silent' }),
    settings,
    // Nothing here is confirmed by a watch: assumed pods stay.
    assumedPodTTLms: Number.MAX_SAFE_INTEGER,
  });
  for (const kind of KINDS) store.replace(kind, objects(kind) as Iterable<KindMap[typeof kind]>);
  return { store, deps };
}

/** A private copy of `store`'s current objects. */
export function copyOf(store: ClusterStore, settings: VolumePluginsSettings): WhatIf {
  return whatIf((kind) => store.list(kind), settings);
}
