// What replaces upstream's assumed-pod expiry (removed upstream because expiring during slow binds double-booked
// nodes): after our bind finished and the TTL passed without the watch confirming the pod, ask the API.
import type { Pod } from '../cluster/types.ts';
import type { Log } from '../log.ts';
import type { AssumedPod } from './interface.ts';
import { isAssignedNonTerminal } from './store-feed.ts';

/** Looks a pod up in the API server; undefined when it does not exist. */
export type GetPod = (namespace: string, name: string) => Promise<Pod | undefined>;

export interface ReconcileResult {
  /** UIDs found bound in the API and confirmed (moved when the API has them on another node). */
  confirmed: string[];
  /** UIDs gone, unbound, replaced by another UID, or terminal in the API, and dropped. */
  forgotten: string[];
  /** UIDs whose lookup failed; they stay assumed and are tried again next time. */
  failed: string[];
}

/** The cache verbs reconciling needs. */
export interface ReconciledCache {
  assumedPods(): AssumedPod[];
  getPod(uid: string): Pod | undefined;
  isAssumed(uid: string): boolean;
  addPod(pod: Pod): void;
  forgetPod(pod: Pod): void;
}

export interface ReconcileOptions {
  ttlMs: number;
  now: number;
  log: Log;
}

/**
 * Bound in the API (same UID, assigned, not terminal) → confirmed as if the watch had added it; gone, unbound,
 * replaced or terminal → forgotten. Pods whose bind is still in flight are never touched, however old.
 */
export async function reconcileAssumedPods(
  cache: ReconciledCache,
  getPod: GetPod,
  { ttlMs, now, log }: ReconcileOptions,
): Promise<ReconcileResult> {
  const due = cache
    .assumedPods()
    .filter((a) => a.bindingFinished && a.finishedAt !== undefined && now - a.finishedAt > ttlMs);
  const result: ReconcileResult = { confirmed: [], forgotten: [], failed: [] };
  await Promise.all(
    due.map(async (a) => {
      const assumed = cache.getPod(a.uid);
      const ref = { pod: `${a.namespace}/${a.name}`, uid: a.uid, assumedNode: a.nodeName };
      let live: Pod | undefined;
      try {
        live = await getPod(a.namespace, a.name);
      } catch (err) {
        log.warn({ ...ref, err }, 'Could not look up assumed pod; keeping it assumed');
        result.failed.push(a.uid);
        return;
      }
      // The watch may have confirmed or removed it (or it was forgotten and assumed again) while we waited.
      if (!assumed || cache.getPod(a.uid) !== assumed || !cache.isAssumed(a.uid)) return;
      if (live && live.metadata.uid === a.uid && isAssignedNonTerminal(live)) {
        log.info(
          { ...ref, node: live.spec.nodeName },
          'Assumed pod not confirmed by the watch in time; found bound in the API, confirming it',
        );
        cache.addPod(live);
        result.confirmed.push(a.uid);
      } else {
        log.warn(ref, 'Assumed pod not confirmed by the watch in time and not bound in the API; forgetting it');
        cache.forgetPod(assumed);
        result.forgotten.push(a.uid);
      }
    }),
  );
  return result;
}
