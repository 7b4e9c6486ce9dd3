// Bind reservations: a pod's volumes assumed for one node by reserve, shared by overlapping binds of the same pod UID
// (kube-scheduler retries a bind whose reply timed out), released when the last holder lets go or the bind settles.
// It outlives the cycle that made it, so it lives in the scheduling state (src/framework/scheduling-state.ts).
import type { PodVolumes } from './binder.ts';

export interface Reservation {
  podUID: string;
  nodeName: string;
  allBound: boolean;
  assumed: PodVolumes;
  /** Cycles currently holding it; the assumption is reverted when the last one lets go without binding. */
  holders: number;
  binding?: Promise<void>;
  /** Settled binding (success or failure): nothing is waiting on it any more. */
  settled: boolean;
  bound: boolean;
  /** When reserve assumed the volumes (ms). */
  reservedAt: number;
}

export class VolumeReservations {
  readonly #byPod = new Map<string, Reservation>();

  get(podUID: string): Reservation | undefined {
    return this.#byPod.get(podUID);
  }

  add(r: Reservation): void {
    this.#byPod.set(r.podUID, r);
  }

  /** Forgets the reservation if it is still the pod's current one. */
  release(r: Reservation): void {
    if (this.#byPod.get(r.podUID) === r) this.#byPod.delete(r.podUID);
  }

  /**
   * Drops reservations whose bind never came back (no unreserve, no bind in progress) once older than `ttlMs`, and
   * returns them for their assumptions to be reverted.
   */
  expire(now: number, ttlMs: number): Reservation[] {
    const expired: Reservation[] = [];
    for (const [uid, r] of this.#byPod) {
      const waiting = r.binding !== undefined && !r.settled;
      if (waiting || now - r.reservedAt <= ttlMs) continue;
      this.#byPod.delete(uid);
      expired.push(r);
    }
    return expired;
  }

  podUIDs(): string[] {
    return [...this.#byPod.keys()];
  }
}
