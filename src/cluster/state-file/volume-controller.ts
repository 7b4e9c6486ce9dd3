// A simulated PV controller plus external provisioner for the cluster-state mode, so the scheduler's volume flow (assume,
// write PV/PVC, wait for the binding) completes end to end without a cluster. It reacts to store events and writes
// through the cluster-state file's state, which brings its changes back as store events with fresh resourceVersions.
// A test and embedded-mode tool: no retries, no deletion or reclaim handling, no provisioning of Immediate claims.
import { pino } from 'pino';
import type { Log } from '../../log.ts';
import type { ClusterStore } from '../store.ts';
import { objectKey, type PersistentVolume, type PersistentVolumeClaim } from '../types.ts';
import { ANN_SELECTED_NODE } from '../volume-annotations.ts';
import { bindClaim, bindVolume, claimKey, volumeReservedFor } from './bind.ts';
import { planProvisioning } from './provision.ts';
import type { ClusterState } from './state.ts';

export class VolumeController {
  readonly #store: ClusterStore;
  readonly #state: ClusterState;
  readonly #logger: Log;
  /** Work keys (`pv:<name>`, `pvc:<ns>/<name>`) in arrival order; processed on the next turn of the event loop. */
  #queue = new Set<string>();
  #scheduled = false;
  #unsubscribe: (() => void)[] = [];
  #idle: (() => void)[] = [];

  /** `source` is the ClusterStateSource (or anything holding its state); `store` the store it fills. */
  constructor(store: ClusterStore, source: { state: ClusterState }, logger: Log = pino({ level: 'silent' })) {
    this.#store = store;
    this.#state = source.state;
    this.#logger = logger;
  }

  /** Subscribes to PV/PVC events and queues what the store already holds. */
  start(): void {
    this.#unsubscribe.push(
      this.#store.on('PersistentVolume', (e) => {
        if (e.type !== 'delete') this.#enqueue(`pv:${e.obj.metadata.name}`);
      }),
      this.#store.on('PersistentVolumeClaim', (e) => {
        if (e.type !== 'delete') this.#enqueue(`pvc:${objectKey('PersistentVolumeClaim', e.obj)}`);
      }),
    );
    for (const pv of this.#store.list('PersistentVolume')) this.#enqueue(`pv:${pv.metadata.name}`);
    for (const pvc of this.#store.list('PersistentVolumeClaim'))
      this.#enqueue(`pvc:${objectKey('PersistentVolumeClaim', pvc)}`);
  }

  stop(): void {
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
    this.#queue.clear();
  }

  /** Resolves once the queue is empty and every write has reached the store (tests and shutdown use it). */
  async idle(): Promise<void> {
    while (this.#queue.size > 0 || this.#scheduled) {
      await new Promise<void>((resolve) => this.#idle.push(resolve));
    }
    await this.#state.delivered();
    if (this.#queue.size > 0 || this.#scheduled) await this.idle();
  }

  #enqueue(key: string): void {
    this.#queue.add(key);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#drain());
  }

  #drain(): void {
    const keys = [...this.#queue];
    this.#queue.clear();
    for (const key of keys) {
      try {
        if (key.startsWith('pv:')) this.#syncVolume(key.slice(3));
        else this.#syncClaim(key.slice(4));
      } catch (err) {
        this.#logger.error({ err, key }, 'volume controller: sync failed');
      }
    }
    this.#scheduled = false;
    if (this.#queue.size > 0) {
      this.#scheduled = true;
      setImmediate(() => this.#drain());
      return;
    }
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }

  /** A PV reserved for a claim (by the scheduler, a provisioner or a user) gets the binding completed on both sides. */
  #syncVolume(name: string): void {
    const pv = this.#state.get('PersistentVolume', name);
    const ref = pv?.spec.claimRef;
    if (!pv || !ref?.name) return;
    const claim = this.#state.get('PersistentVolumeClaim', claimKey(ref));
    if (!claim || !volumeReservedFor(pv, claim)) return;
    if (claim.spec.volumeName && claim.spec.volumeName !== pv.metadata.name) return; // the claim wants another PV
    this.#bind(pv, claim);
  }

  #syncClaim(key: string): void {
    const claim = this.#state.get('PersistentVolumeClaim', key);
    if (!claim) return;
    if (claim.spec.volumeName) {
      // Pre-bound claim: complete it when its PV is free or already reserved for it.
      const pv = this.#state.get('PersistentVolume', claim.spec.volumeName);
      if (pv && (!pv.spec.claimRef?.name || volumeReservedFor(pv, claim))) this.#bind(pv, claim);
      return;
    }
    if (!claim.metadata.annotations?.[ANN_SELECTED_NODE]) return;
    const plan = planProvisioning(this.#state, claim);
    if (plan.action === 'none') return;
    if (plan.action === 'reschedule') {
      // As the external provisioner does on a final error: drop the annotation so the scheduler picks again.
      const { [ANN_SELECTED_NODE]: _node, ...annotations } = claim.metadata.annotations;
      this.#state.commit('PersistentVolumeClaim', { ...claim, metadata: { ...claim.metadata, annotations } });
      this.#logger.warn({ claim: key }, `volume controller: provisioning failed, rescheduling: ${plan.why}`);
      return;
    }
    const pv = this.#state.commit('PersistentVolume', plan.pv);
    if (plan.capacity) this.#state.commit('CSIStorageCapacity', plan.capacity);
    this.#logger.info({ claim: key, pv: pv.metadata.name }, 'volume controller: provisioned');
    this.#bind(pv, claim);
  }

  #bind(pv: PersistentVolume, claim: PersistentVolumeClaim): void {
    const volume = bindVolume(pv, claim);
    const stored = volume ? this.#state.commit('PersistentVolume', volume) : pv;
    const bound = bindClaim(claim, stored);
    if (bound) this.#state.commit('PersistentVolumeClaim', bound);
  }
}
