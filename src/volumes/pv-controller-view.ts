// Whether kube-controller-manager's PV controller has surely seen a PV's claimRef as we see it: what decides if a
// claim half may carry bind-completed (bind-writes.ts #bindClaim), saving the controller's own write of the claim.
//
// A claim with bind-completed goes through the controller's syncBoundClaim, which trusts the controller's PV informer:
// a PV it lacks, or one whose claimRef names another claim, marks the claim Lost ("ClaimMisbound") until a later sync
// finds the PV naming it. Without bind-completed (syncUnboundClaim) a lagging controller only retries. Upstream never
// takes that risk (the controller writes bind-completed from its own view), so we take it only where it is absent:
//
// - a PV status write came after the claimRef (and incarnation) we see last changed. Only the PV controller writes PV
//   status; it writes from its informer's copy under a resourceVersion precondition, stores the answer in that
//   informer's cache, and that cache never goes back to an older version. So its view already has this claimRef, and
//   our PV write, conditional on the same version, lets nothing in between. The controller's Available write of a new
//   PV is such a write, so a PV created while we watch qualifies as soon as it can be bound.
// - otherwise (a PV we first saw in a list, or whose claimRef someone other than the controller changed, e.g. our own
//   unbindLost), once our watch has shown the same claimRef for SETTLED_SECONDS: the controller watches the same API
//   server. A controller whose watch lags longer than that marks the claim Lost until its next sync after catching
//   up, the only risk left, and it heals.
import type { StoreEvent } from '../cluster/store.ts';
import type { PersistentVolume } from '../cluster/types.ts';

/** How long our watch must show a PV's claimRef before the controller is taken to see it too. */
export const SETTLED_SECONDS = 30;

interface Unsettled {
  /** Incarnation and claimRef, the fields the controller's syncBoundClaim judges. */
  signature: string;
  /** When our watch first showed this signature (ms since the epoch); 0 once a controller write followed it. */
  since: number;
}

function signature(pv: PersistentVolume): string {
  const ref = pv.spec.claimRef;
  return `${pv.metadata.uid ?? ''}|${ref ? `${ref.namespace ?? ''}/${ref.name ?? ''}/${ref.uid ?? ''}` : ''}`;
}

/**
 * Only the PVs changed in the last SETTLED_SECONDS are kept, oldest first (the PVs the store held at the start count
 * from the start), so that a cluster's worth of PVs costs nothing once settled.
 */
export class PVControllerView {
  readonly #unsettled = new Map<string, Unsettled>();
  readonly #now: () => number;
  readonly #startedAt: number;

  /** The PVs the store holds already count as changed now, as do those its list or watch adds later. */
  constructor(now: () => number) {
    this.#now = now;
    this.#startedAt = now();
  }

  /**
   * Follows the store's PV events. The adds of the store's first list (`firstList`) count from the start, as the PVs
   * it held did, without an entry each: a cluster's worth of entries at ready was ~100 MiB at 15,000 nodes.
   */
  observe(event: StoreEvent<'PersistentVolume'>, firstList = false): void {
    const name = event.obj.metadata.name;
    if (firstList && event.type === 'add') return;
    if (event.type === 'delete') this.#unsettled.delete(name);
    else {
      const sig = signature(event.obj);
      const before = this.#unsettled.get(name)?.signature ?? (event.type === 'update' ? signature(event.old) : '');
      const statusWritten = event.type === 'update' && event.old.status?.phase !== event.obj.status?.phase;
      if (event.type === 'add' || before !== sig) this.#settleFrom(name, sig, this.#now());
      else if (statusWritten) this.#settleFrom(name, sig, 0);
    }
    this.#sweep();
  }

  /** Whether the PV controller surely sees `pv`'s incarnation and claimRef (pv: a version our watch delivered). */
  seesClaimRef(pv: PersistentVolume): boolean {
    this.#sweep();
    const now = this.#now();
    const entry = this.#unsettled.get(pv.metadata.name);
    if (!entry) return now - this.#startedAt >= SETTLED_SECONDS * 1000;
    return entry.signature === signature(pv) && now - entry.since >= SETTLED_SECONDS * 1000;
  }

  /** PVs still tracked (tests). */
  get tracked(): number {
    return this.#unsettled.size;
  }

  /** Oldest first: re-set at the end. */
  #settleFrom(name: string, sig: string, since: number): void {
    this.#unsettled.delete(name);
    this.#unsettled.set(name, { signature: sig, since });
  }

  #sweep(): void {
    const now = this.#now();
    if (now - this.#startedAt < SETTLED_SECONDS * 1000) return;
    for (const [name, entry] of this.#unsettled) {
      if (now - entry.since < SETTLED_SECONDS * 1000) break;
      this.#unsettled.delete(name);
    }
  }
}
