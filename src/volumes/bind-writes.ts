// The binder's writes (upstream's bindAPIUpdate, for several writers): hold each static binding's claim, write its
// PV's claimRef, then the claim's half; annotate the claims to provision; on failure restore the caches, release the
// holds and unbind the PVs whose claims another writer bound. The hold itself is claim-hold.ts; whether a refused
// write landed all the same is read back (cluster/read-back.ts).
import { writeThenReadBack } from '../cluster/read-back.ts';
import { namespaceOf, type PersistentVolume, type PersistentVolumeClaim } from '../cluster/types.ts';
import { type ClusterWriter, WriteError } from '../cluster/writer.ts';
import type { Log } from '../log.ts';
import type { BindingInfo, PodVolumes } from './binder.ts';
import {
  ANN_SELECTED_VOLUME,
  claimHold,
  heldForOtherVolume,
  ServedHolds,
  withHold,
  withoutHold,
} from './claim-hold.ts';
import { ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER } from './constants.ts';
import { ProvisionedHalves } from './provisioned-halves.ts';
import type { PVControllerView } from './pv-controller-view.ts';
import { claimKey, isVolumeBoundToClaim } from './pv-matching.ts';
import type { BinderSources } from './sources.ts';

/** Waits for every write to settle (so that the caller knows which landed), then throws the first failure. */
export async function allWritten(writes: Promise<void>[]): Promise<void> {
  const failed = (await Promise.allSettled(writes)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

export interface BindWriterOptions {
  sources: BinderSources;
  writer: ClusterWriter;
  logger: Log;
  /** The clock of claim holds. */
  now: () => number;
  /** Whether the PV controller surely sees a PV's claimRef as we do (when a claim half may carry bind-completed). */
  controllerView: PVControllerView;
}

export class BindWriter {
  readonly #sources: BinderSources;
  readonly #writer: ClusterWriter;
  readonly #logger: Log;
  readonly #now: () => number;
  readonly #servedHolds: ServedHolds;
  readonly #controllerView: PVControllerView;
  readonly #provisionedHalves: ProvisionedHalves;

  constructor(options: BindWriterOptions) {
    this.#sources = options.sources;
    this.#controllerView = options.controllerView;
    this.#writer = options.writer;
    this.#logger = options.logger;
    this.#now = options.now;
    this.#servedHolds = new ServedHolds({
      latest: (key) => this.#sources.pvcCache.getAPI(key),
      drop: (pvc) => this.#writer.bindClaimToVolume(pvc, pvc.spec.volumeName!, { [ANN_SELECTED_VOLUME]: null }),
      gaveUp: (err, key) => this.#logger.info({ err, pvc: key }, 'could not drop the hold of a bound claim; it stays'),
    });
    this.#provisionedHalves = new ProvisionedHalves({
      // The store, not the assume caches: it has an event's object before anyone is told of the event.
      claim: (key) => this.#sources.store.get('PersistentVolumeClaim', key),
      volume: (name) => this.#sources.store.get('PersistentVolume', name),
      complete: async (pvc) => {
        const pv = pvc.spec.volumeName!;
        this.#logger.info(
          { pvc: claimKey(pvc), pv },
          'the PV controller marked the PV Bound but left its claim Pending until its next resync: writing bind-completed',
        );
        await this.#writer.bindClaimToVolume(pvc, pv, { [ANN_BIND_COMPLETED]: 'yes' });
      },
      failed: (err, key) =>
        this.#logger.info(
          { err, pvc: key },
          'could not write bind-completed; the PV controller completes the claim at its next resync',
        ),
    });
  }

  /** A claim changed (the watch): a served hold waiting for it to be Bound may go, a provisioned half be complete. */
  claimChanged(key: string): void {
    this.#servedHolds.changed(key);
    this.#provisionedHalves.claimChanged(key);
  }

  /** A PV changed (the watch): the PV controller may have marked a provisioned half's PV Bound. */
  volumeChanged(name: string): void {
    this.#provisionedHalves.volumeChanged(name);
  }

  close(): void {
    this.#provisionedHalves.close();
  }

  /**
   * bindAPIUpdate: holds each static binding's claim for its PV (see claim-hold.ts), writes each assumed PV, then
   * each static binding's claim half (see #bindClaim), then each annotated PVC, with their resourceVersion as
   * precondition. On the first failure what was not written is restored, the holds whose PV is known not written are
   * released, and the write error is thrown. Returns what the API stored.
   */
  async bindAPIUpdate(podVolumes: PodVolumes): Promise<PodVolumes> {
    const bindings = podVolumes.staticBindings.map((b) => ({ ...b }));
    const provisions = podVolumes.dynamicProvisions.map((p) => ({ ...p }));
    const holds: (PersistentVolumeClaim | undefined)[] = [];
    /** Per binding: its PV written, not written, or 'maybe' (an outcome unknown: the PV may be prebound). */
    const pvWritten: (boolean | 'maybe')[] = bindings.map(() => false);
    /** Per binding: whether its claim half may carry bind-completed (pv-controller-view.ts). */
    const completes = bindings.map(() => false);
    const pvcWritten = provisions.map(() => false);
    try {
      // A stage writes its object of every claim at once, and starts once the one before succeeded for all: every
      // hold before any PV (a writer that loses one claim of the pod has written no PV yet), every PV before any
      // claim half.
      await allWritten(
        bindings.map(async (b, i) => {
          holds[i] = await this.#holdClaim(b);
        }),
      );
      await allWritten(
        bindings.map(async (b, i) => {
          this.#logger.debug({ pv: b.pv.metadata.name, pvc: claimKey(b.pvc) }, 'binding PV to PVC');
          // Judged on the version our write is conditional on, before its event can arrive.
          const base = this.#sources.pvCache.getAPI(b.pv.metadata.name);
          const seen =
            base?.metadata.resourceVersion === b.pv.metadata.resourceVersion && this.#controllerView.seesClaimRef(base);
          try {
            const written = await this.#writePV(b);
            b.pv = written.pv;
            completes[i] = seen && written.ours;
            pvWritten[i] = true;
          } catch (err) {
            if (err instanceof WriteError && err.uncertain) pvWritten[i] = 'maybe';
            throw err;
          }
        }),
      );
      await allWritten(
        bindings.map(async (b, i) => {
          b.pvc = await this.#bindClaim(b, holds[i], completes[i]);
        }),
      );
      await allWritten(
        provisions.map(async (p, i) => {
          p.pvc = await this.#writer.updatePersistentVolumeClaim(p.pvc);
          pvcWritten[i] = true;
        }),
      );
    } catch (err) {
      for (const [i, b] of bindings.entries())
        if (pvWritten[i] !== true) this.#sources.pvCache.restore(b.pv.metadata.name);
      for (const [i, p] of provisions.entries()) if (!pvcWritten[i]) this.#sources.pvcCache.restore(claimKey(p.pvc));
      // A PV write whose outcome is unknown may have prebound its PV: its claim keeps the hold (until it expires), so
      // that no other bind gives the claim a second PV meanwhile.
      await this.#releaseHolds(holds.filter((_, i) => pvWritten[i] === false));
      // A claim half that lost to another writer leaves PVs this bind wrote naming a claim bound elsewhere.
      await this.unbindLost(bindings.filter((_, i) => pvWritten[i] === true));
      throw err;
    }
    return { staticBindings: bindings, dynamicProvisions: provisions };
  }

  /**
   * Writes the claim's hold for the binding's PV, conditional on the version whose hold was checked. Returns the
   * claim as written (or read back holding it), or undefined when nothing needed writing (already held for this PV in
   * the watch's view, or bound to it). Throws a 409 WriteError when another writer holds or bound the claim: this
   * bind steps back.
   */
  async #holdClaim(b: BindingInfo): Promise<PersistentVolumeClaim | undefined> {
    const pvName = b.pv.metadata.name;
    const key = claimKey(b.pvc);
    const current = this.#sources.pvcCache.getAPI(key) ?? b.pvc;
    const now = this.#now();
    const taken = this.#claimTaken(current, pvName, now);
    if (taken) throw new WriteError(409, 'Conflict', taken);
    if (current.spec.volumeName || claimHold(current)?.pv === pvName) return undefined;
    const written = await writeThenReadBack(
      () => this.#writer.updatePersistentVolumeClaim(withHold(current, pvName, now)),
      { readBack: () => this.#writer.getPersistentVolumeClaim(namespaceOf(current), current.metadata.name) },
    );
    if (written.kind === 'written') return written.value;
    if (written.kind === 'unread') throw written.readError;
    // Someone wrote the claim since our watch saw it: go on only if it is held for (or bound to) our PV.
    const live = written.current;
    if (!live) throw written.error;
    const liveTaken = this.#claimTaken(live, pvName, now);
    if (liveTaken) throw new WriteError(409, 'Conflict', liveTaken);
    if (live.spec.volumeName === pvName) return undefined;
    // Held for our PV: this bind's own write whose reply was lost, or another bind of the same claim and PV.
    if (claimHold(live)?.pv === pvName) return live;
    throw written.error;
  }

  /** Why the claim is not this bind's to take for `pvName`: bound to another PV or held for one. */
  #claimTaken(pvc: PersistentVolumeClaim, pvName: string, now: number): string | undefined {
    const key = claimKey(pvc);
    const bound = pvc.spec.volumeName;
    if (bound) return bound === pvName ? undefined : `claim "${key}" is bound to volume "${bound}", not "${pvName}"`;
    const other = heldForOtherVolume(pvc, pvName, now, (name) => this.#sources.pvCache.getAPI(name));
    return other && `claim "${key}" is held for volume "${other}" by another bind`;
  }

  /**
   * Writes the PV's claimRef. A 409 is read back: the PV already prebound to the same claim (another bind of the
   * claim wrote it) is taken as written, though not by us (`ours` false); anything else fails the bind.
   */
  async #writePV(b: BindingInfo): Promise<{ pv: PersistentVolume; ours: boolean }> {
    const written = await writeThenReadBack(() => this.#writer.updatePersistentVolume(b.pv), {
      readBack: () => this.#writer.getPersistentVolume(b.pv.metadata.name),
    });
    if (written.kind === 'written') return { pv: written.value, ours: true };
    if (written.kind === 'unread') throw written.readError;
    const live = written.current;
    if (live?.spec.claimRef?.uid && isVolumeBoundToClaim(live, b.pvc)) return { pv: live, ours: false };
    throw written.error;
  }

  /**
   * The claim's half of a static binding, written once its PV names it: spec.volumeName and bound-by-controller, as
   * the PV controller's bindClaimToVolume would write them, and with `bindCompleted` its bind-completed too, leaving
   * the controller only the two Bound phases to set (upstream leaves it the claim too, and its PreBind waits for all
   * three). volumeName can be set only once, so it is the binding's record and the hold, having served, is dropped.
   * bind-completed only when the controller surely sees the PV's claimRef (pv-controller-view.ts): on a claim
   * carrying it, a controller whose PV informer lags would see the PV's old claimant and mark the claim Lost; without
   * it, such a controller only retries, and writes bind-completed itself.
   * The controller races this write (our PV write told it the claim's PV): a 409 or an unknown outcome is read back;
   * a claim bound to this PV is the binding done (its hold goes once the controller has marked it Bound: ServedHolds),
   * one bound or held elsewhere fails the bind, one changed otherwise (its status) is written again.
   */
  async #bindClaim(
    b: BindingInfo,
    held: PersistentVolumeClaim | undefined,
    bindCompleted: boolean,
  ): Promise<PersistentVolumeClaim> {
    const pvName = b.pv.metadata.name;
    let current = held ?? this.#sources.pvcCache.getAPI(claimKey(b.pvc)) ?? b.pvc;
    for (let attempt = 1; ; attempt++) {
      const existing = current.metadata.annotations ?? {};
      if (current.spec.volumeName === pvName) {
        if (Object.hasOwn(existing, ANN_SELECTED_VOLUME)) this.#servedHolds.add(claimKey(current));
        return current;
      }
      const taken = this.#claimTaken(current, pvName, this.#now());
      if (taken) throw new WriteError(409, 'Conflict', taken);
      const annotations: Record<string, string | null> = {};
      if (!Object.hasOwn(existing, ANN_BOUND_BY_CONTROLLER)) annotations[ANN_BOUND_BY_CONTROLLER] = 'yes';
      if (Object.hasOwn(existing, ANN_SELECTED_VOLUME)) annotations[ANN_SELECTED_VOLUME] = null;
      if (bindCompleted && !Object.hasOwn(existing, ANN_BIND_COMPLETED)) annotations[ANN_BIND_COMPLETED] = 'yes';
      const claim = current;
      const written = await writeThenReadBack(() => this.#writer.bindClaimToVolume(claim, pvName, annotations), {
        readBack:
          attempt < 3
            ? () => this.#writer.getPersistentVolumeClaim(namespaceOf(claim), claim.metadata.name)
            : undefined,
        unknown: true,
      });
      if (written.kind === 'written') return written.value;
      if (written.kind === 'unread') throw written.readError;
      if (!written.current) throw written.error;
      current = written.current;
    }
  }

  /** A provisioned claim's half, once the provisioner's PV names it; the claim unchanged when the controller bound it. */
  async bindProvisionedClaim(written: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
    const key = claimKey(written);
    const pvc = this.#sources.pvcCache.getAPI(key) ?? written;
    if (pvc.spec.volumeName) return pvc;
    const pv = this.#sources.pvCache.apiVolumeClaimedBy(key, pvc.metadata.uid);
    if (!pv) return pvc;
    const bound = await this.#bindClaim({ pvc, pv }, undefined, this.#controllerView.seesClaimRef(pv));
    const completed = Object.hasOwn(bound.metadata.annotations ?? {}, ANN_BIND_COMPLETED);
    if (!completed && bound.spec.volumeName === pv.metadata.name) this.#provisionedHalves.add(key, pv.metadata.name);
    return bound;
  }

  /** Releases holds this bind wrote (best effort: a hold it cannot release expires). */
  async #releaseHolds(holds: readonly (PersistentVolumeClaim | undefined)[]): Promise<void> {
    for (const held of holds) {
      if (!held) continue;
      try {
        await this.#writer.updatePersistentVolumeClaim(withoutHold(held));
      } catch (err) {
        this.#logger.info({ err, pvc: claimKey(held) }, 'could not release the claim hold; it expires');
      }
    }
  }

  /**
   * After a failed bind: each PV it wrote whose claim (read from the API) is bound to another PV is unbound, as the
   * PV controller would unbind it (the PV carries bound-by-controller). A PV whose claim is still unbound stays
   * prebound, as upstream leaves it: the PV controller binds the claim to it and the pod's retry goes where it is.
   */
  async unbindLost(bindings: readonly BindingInfo[]): Promise<void> {
    for (const b of bindings) {
      try {
        const [pv, pvc] = await Promise.all([
          this.#writer.getPersistentVolume(b.pv.metadata.name),
          this.#writer.getPersistentVolumeClaim(namespaceOf(b.pvc), b.pvc.metadata.name),
        ]);
        if (!pv || !pvc?.spec.volumeName || pvc.spec.volumeName === pv.metadata.name) continue;
        if (pv.spec.claimRef?.uid !== pvc.metadata.uid) continue;
        await this.#writer.unbindPersistentVolume(pv);
        this.#logger.info({ pv: pv.metadata.name, pvc: claimKey(pvc) }, 'unbound a PV whose claim was bound elsewhere');
      } catch (err) {
        // The PV controller unbinds it too (bound-by-controller, claim bound elsewhere).
        this.#logger.info({ err, pv: b.pv.metadata.name }, 'could not unbind the PV; the PV controller will');
      }
    }
  }
}
