// The claim as the point of conflict between writers (several replicas, a rollout's old and new pod, a stale leader's
// sidecar): before a PV's claimRef names a claim, the claim itself is written, resourceVersion-conditional, with an
// annotation naming the PV chosen. Of two writers that read the same version, the API lets one through and answers
// the other 409; a writer that reads a live hold naming another PV steps back without writing. Each PV write passes
// its own resourceVersion precondition, so without a shared object both writers could claim one claim.
//
// A hold is live while its PV may still become the claim's: the PV exists and is free or prebound to the claim, and
// the hold is younger than HOLD_SECONDS (a writer killed between the claim and the PV write leaves one behind; it
// then stops blocking). A hold released by its writer is the empty string (a merge patch cannot drop a key without
// null); a bound claim keeps its hold, which then names the PV it is bound to.
import type { PersistentVolume, PersistentVolumeClaim } from '../cluster/types.ts';
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
