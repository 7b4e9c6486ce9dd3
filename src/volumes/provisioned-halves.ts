// A provisioned claim's half (bind-writes.ts, bindProvisionedClaim) names the external-provisioner's PV in the claim,
// and kube-controller-manager's PV controller may not have that PV yet. If its claim worker syncs the claim first, it
// finds no such volume and leaves the claim Pending "to try again next time"; its later sync of the PV (the claim
// naming it: "all is bound") marks the PV Bound without looking at the claim again. The claim then waits for the
// controller's periodic resync (--pvclaimbinder-sync-period, 15 s by default), and no kubelet starts the pod before
// its claim is Bound. Seen on a real control plane: 3 of a burst's 30 provisioned claims waited for that resync.
//
// So once the controller has marked the PV Bound (its informer has the PV: the proof pv-controller-view.ts takes for
// bind-completed) and the claim still lacks bind-completed GRACE_MS later (the controller's own bind writes the PV's
// phase, then the claim, one request after the other), we write bind-completed: the claim's event makes the
// controller sync it again, and it finds the PV and marks the claim Bound.
import type { PersistentVolume, PersistentVolumeClaim } from '../cluster/types.ts';
import { ANN_BIND_COMPLETED } from './constants.ts';

/** How long after the controller marked the PV Bound its own write of the claim is waited for. */
export const GRACE_MS = 2_000;

export interface ProvisionedHalvesOptions {
  /** The claim and the PV as the watch last delivered them. */
  claim(key: string): PersistentVolumeClaim | undefined;
  volume(name: string): PersistentVolume | undefined;
  /** Writes bind-completed on the claim, conditional on its resourceVersion. */
  complete(pvc: PersistentVolumeClaim): Promise<unknown>;
  /** Told of a write that failed (the claim then waits for the controller's resync, as it would have). */
  failed(err: unknown, key: string): void;
}

/**
 * `waiting`: the claim names the half's PV, bound back to it, without bind-completed. `unseen`: the watch has not
 * delivered our half yet (the store lags our own write; a claim's volumeName, once set, never goes). `settled`: nothing
 * left to see to.
 */
type HalfState = 'waiting' | 'unseen' | 'settled';

interface Half {
  pv: string;
  /** Cancels the pending check, once the PV was seen Bound. */
  cancel?: () => void;
}

/** Runs `fn` after `ms` unless cancelled; never keeps the process alive. */
function after(ms: number, fn: () => void): () => void {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

export class ProvisionedHalves {
  /** Claim key → the PV its half names; PV name → claim key. */
  readonly #halves = new Map<string, Half>();
  readonly #byVolume = new Map<string, string>();
  readonly #o: ProvisionedHalvesOptions;

  constructor(options: ProvisionedHalvesOptions) {
    this.#o = options;
  }

  /** Our half of the claim `key` names `pv` (without bind-completed): see that the controller completes it. */
  add(key: string, pv: string): void {
    this.#forget(key);
    const half: Half = { pv };
    this.#halves.set(key, half);
    this.#byVolume.set(pv, key);
    this.#consider(key, half);
  }

  /** The claim changed (or went): nothing left to see to once it carries bind-completed or no longer names the PV. */
  claimChanged(key: string): void {
    const half = this.#halves.get(key);
    if (half) this.#consider(key, half);
  }

  /** The PV changed: once the controller marked it Bound, the claim gets GRACE_MS to follow. */
  volumeChanged(name: string): void {
    const key = this.#byVolume.get(name);
    const half = key === undefined ? undefined : this.#halves.get(key);
    if (key !== undefined && half) this.#consider(key, half);
  }

  close(): void {
    for (const key of [...this.#halves.keys()]) this.#forget(key);
  }

  /** Forgets a settled half; gives a waiting one GRACE_MS once its PV is Bound (whichever event came last). */
  #consider(key: string, half: Half): void {
    const state = this.#state(key, half);
    if (state === 'settled') this.#forget(key);
    else if (state === 'waiting' && !half.cancel && this.#o.volume(half.pv)?.status?.phase === 'Bound')
      half.cancel = after(GRACE_MS, () => this.#check(key, half));
  }

  #check(key: string, half: Half): void {
    if (this.#halves.get(key) !== half) return;
    this.#forget(key);
    const pvc = this.#o.claim(key);
    if (!pvc || this.#state(key, half) !== 'waiting') return;
    this.#o.complete(pvc).catch((err: unknown) => this.#o.failed(err, key));
  }

  #state(key: string, half: Half): HalfState {
    const pvc = this.#o.claim(key);
    if (!pvc) return 'settled';
    if (!pvc.spec.volumeName) return 'unseen';
    if (pvc.spec.volumeName !== half.pv || Object.hasOwn(pvc.metadata.annotations ?? {}, ANN_BIND_COMPLETED))
      return 'settled';
    const pv = this.#o.volume(half.pv);
    return pv !== undefined && pv.spec.claimRef?.uid === pvc.metadata.uid ? 'waiting' : 'settled';
  }

  #forget(key: string): void {
    const half = this.#halves.get(key);
    if (!half) return;
    half.cancel?.();
    this.#halves.delete(key);
    if (this.#byVolume.get(half.pv) === key) this.#byVolume.delete(half.pv);
  }
}
