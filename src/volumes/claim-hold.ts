// The claim as the point of conflict between writers (several replicas, a rollout's old and new pod, a stale leader's
// sidecar): before a PV's claimRef names a claim, the claim itself is written, resourceVersion-conditional, with an
// annotation naming the PV chosen. Of two writers that read the same version, the API lets one through and answers
// the other 409; a writer that reads a live hold naming another PV steps back without writing. Each PV write passes
// its own resourceVersion precondition, so without a shared object both writers could claim one claim.
//
// A hold is live while its PV may still become the claim's: the PV exists and is free or prebound to the claim, and
// the hold is younger than HOLD_SECONDS (a writer killed between the claim and the PV write leaves one behind; it
// then stops blocking). A hold released by a bind that failed is the empty string. A bind that succeeds drops it with
// the claim half it writes (bind-writes.ts #bindClaim), or once the PV controller has marked the claim Bound
// (ServedHolds).
import type { PersistentVolume, PersistentVolumeClaim } from '../cluster/types.ts';
import { ANN_BIND_COMPLETED } from './constants.ts';
import { isVolumeBoundToClaim } from './pv-matching.ts';

export const ANN_SELECTED_VOLUME = 'topology-extender.io/selected-volume';

/**
 * How long a hold outlives its writer. A live writer writes the PV within one API round trip of the hold (plus the
 * writer's 5xx retries); a takeover after it is still safe (the bind checks the claim before the Binding and the PV
 * controller unbinds the loser's PV), only wasteful.
 */
export const HOLD_SECONDS = 60;

export interface ClaimHold {
  pv: string;
  /** When it was written, ms since the epoch. */
  at: number;
}

/** `pv@2025-01-01T00:00:00.000Z`: '@' never occurs in a PV name (a DNS subdomain). */
export function holdValue(pv: string, now: number): string {
  return `${pv}@${new Date(now).toISOString()}`;
}

export function claimHold(pvc: PersistentVolumeClaim): ClaimHold | undefined {
  const value = pvc.metadata.annotations?.[ANN_SELECTED_VOLUME];
  if (!value) return undefined;
  const at = value.lastIndexOf('@');
  const time = at > 0 ? Date.parse(value.slice(at + 1)) : Number.NaN;
  if (Number.isNaN(time)) return undefined;
  return { pv: value.slice(0, at), at: time };
}

/** The PV another writer holds the claim for, or undefined when the claim is free for `pvName`. */
export function heldForOtherVolume(
  pvc: PersistentVolumeClaim,
  pvName: string,
  now: number,
  getPV: (name: string) => PersistentVolume | undefined,
): string | undefined {
  const hold = claimHold(pvc);
  if (!hold || hold.pv === pvName || now - hold.at > HOLD_SECONDS * 1000) return undefined;
  const pv = getPV(hold.pv);
  if (!pv || (pv.spec.claimRef && !isVolumeBoundToClaim(pv, pvc))) return undefined;
  return hold.pv;
}

/** The claim with a hold for `pvName` written at `now`. */
export function withHold(pvc: PersistentVolumeClaim, pvName: string, now: number): PersistentVolumeClaim {
  return {
    ...pvc,
    metadata: {
      ...pvc.metadata,
      annotations: { ...pvc.metadata.annotations, [ANN_SELECTED_VOLUME]: holdValue(pvName, now) },
    },
  };
}

/** The claim with its hold released. */
export function withoutHold(pvc: PersistentVolumeClaim): PersistentVolumeClaim {
  return {
    ...pvc,
    metadata: { ...pvc.metadata, annotations: { ...pvc.metadata.annotations, [ANN_SELECTED_VOLUME]: '' } },
  };
}

/**
 * Holds to drop once their claim is Bound. A bind drops its hold with the claim half it writes; when the PV controller
 * bound the claim first (our PV write told it the claim's PV), dropping the hold at once would race the controller's
 * next write, the claim's status. So the hold goes once the controller is done: the claim Bound with bind-completed.
 * Holds left by earlier releases on claims bound long ago stay: harmless records (a bound claim is never held).
 */
export class ServedHolds {
  /** Claim key → the resourceVersion last tried (a refused write is tried again on a newer version only). */
  readonly #waiting = new Map<string, { tried?: string; refusals: number }>();
  readonly #writing = new Set<string>();
  readonly #o: ServedHoldsOptions;
  static readonly MAX_REFUSALS = 3;

  constructor(options: ServedHoldsOptions) {
    this.#o = options;
  }

  /** Drop the claim's hold once it is Bound (now, if it is). */
  add(key: string): void {
    if (!this.#waiting.has(key)) this.#waiting.set(key, { refusals: 0 });
    this.changed(key);
  }

  get size(): number {
    return this.#waiting.size;
  }

  /** The claim changed (or went): drop its hold if it waits for that. */
  changed(key: string): void {
    const state = this.#waiting.get(key);
    if (!state || this.#writing.has(key)) return;
    const pvc = this.#o.latest(key);
    const annotations = pvc?.metadata.annotations ?? {};
    if (!pvc || !Object.hasOwn(annotations, ANN_SELECTED_VOLUME)) {
      this.#waiting.delete(key);
      return;
    }
    const bound = pvc.status?.phase === 'Bound' && Object.hasOwn(annotations, ANN_BIND_COMPLETED);
    if (!bound || state.tried === pvc.metadata.resourceVersion) return;
    state.tried = pvc.metadata.resourceVersion;
    this.#writing.add(key);
    this.#o
      .drop(pvc)
      .then(
        () => this.#waiting.delete(key),
        (err: unknown) => {
          if (++state.refusals < ServedHolds.MAX_REFUSALS) return;
          this.#waiting.delete(key);
          this.#o.gaveUp(err, key);
        },
      )
      .finally(() => {
        this.#writing.delete(key);
        // A version that arrived while writing was not looked at.
        this.changed(key);
      });
  }
}

export interface ServedHoldsOptions {
  /** The claim as the watch last delivered it. */
  latest(key: string): PersistentVolumeClaim | undefined;
  /** Writes the claim without its hold, conditional on its resourceVersion. */
  drop(pvc: PersistentVolumeClaim): Promise<unknown>;
  gaveUp(err: unknown, key: string): void;
}
