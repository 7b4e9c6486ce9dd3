// Which scheduled pods use which claims, cluster-wide (upstream StorageInfos().IsPVCUsedByPods): the
// ReadWriteOncePod check needs it for every node at once, so it is kept as an index fed by pod events.
import { podClaimKeys } from '../cache/pod-usage.ts';
import { isAssignedNonTerminal } from '../cache/store-feed.ts';
import type { ClusterStore } from '../cluster/store.ts';
import { objectKey, type Pod } from '../cluster/types.ts';

export class ClaimUsage {
  readonly #users = new Map<string, Set<string>>();
  /** Pod UID → `namespace/name`, for pods using any claim (explain names the holders). */
  readonly #names = new Map<string, string>();
  readonly #off: () => void;

  constructor(store: ClusterStore) {
    for (const pod of store.list('Pod')) this.#add(pod);
    this.#off = store.on('Pod', (e) => {
      if (e.type === 'update') this.#remove(e.old);
      if (e.type === 'delete') this.#remove(e.obj);
      else this.#add(e.obj);
    });
  }

  close(): void {
    this.#off();
  }

  /** Pod UIDs (scheduled, not terminated) using the claim `namespace/name`. */
  users(claimKey: string): ReadonlySet<string> {
    return this.#users.get(claimKey) ?? new Set();
  }

  /** `namespace/name` of a pod `users` returned. */
  podName(uid: string): string | undefined {
    return this.#names.get(uid);
  }

  #add(pod: Pod): void {
    // The scheduler's informer drops terminated pods; unscheduled pods use nothing yet.
    if (!isAssignedNonTerminal(pod)) return;
    const keys = podClaimKeys(pod);
    if (keys.length > 0) this.#names.set(pod.metadata.uid, objectKey('Pod', pod));
    for (const key of keys) {
      let set = this.#users.get(key);
      if (!set) {
        set = new Set();
        this.#users.set(key, set);
      }
      set.add(pod.metadata.uid);
    }
  }

  #remove(pod: Pod): void {
    this.#names.delete(pod.metadata.uid);
    for (const key of podClaimKeys(pod)) {
      const set = this.#users.get(key);
      if (set?.delete(pod.metadata.uid) && set.size === 0) this.#users.delete(key);
    }
  }
}
