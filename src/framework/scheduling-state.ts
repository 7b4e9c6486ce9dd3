// The state that outlives a scheduling cycle and that the verbs and plugins share: nominations (pods waiting after
// preempting), what filter decided for the prioritize and bind that follow (decisions.ts), the volumes reserved by
// binds in flight, and which scheduled pods use which claims. Built once with the verbs (extender/build.ts; plugins
// get their parts) and closed on shutdown. Some plugins also keep store-fed state of their own across cycles
// (NodeVolumeLimits' per-node records, the volume binder's assume caches); they register its unsubscribe here
// (onClose), so closing this ends every store subscription.
import { Nominator } from '../cache/nominator.ts';
import type { ClusterStore } from '../cluster/store.ts';
import { ClaimUsage } from '../volumes/claim-usage.ts';
import { DecisionCache } from '../volumes/decisions.ts';
import { VolumeReservations } from '../volumes/reservations.ts';

export class SchedulingState {
  readonly nominator: Nominator;
  readonly decisions = new DecisionCache();
  readonly reservations = new VolumeReservations();
  readonly claimUsage: ClaimUsage;
  readonly #closers: (() => void)[] = [];

  constructor(store: ClusterStore) {
    this.nominator = new Nominator(store);
    this.#closers.push(this.nominator.attach(store));
    this.claimUsage = new ClaimUsage(store);
    this.#closers.push(() => this.claimUsage.close());
  }

  /** Registers the unsubscribe of a store-fed part built elsewhere (the volume binder, per-node plugin records). */
  onClose(close: () => void): void {
    this.#closers.push(close);
  }

  /** Stops every store subscription; idempotent. */
  close(): void {
    for (const close of this.#closers.splice(0).reverse()) close();
  }
}
