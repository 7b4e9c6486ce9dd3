// What the volume binder reads (upstream's listers and assume caches): the PV and PVC assume caches, fed by the
// store; storage classes, CSI drivers, nodes and CSINodes from the store; CSIStorageCapacity through a per-node index;
// provisions in flight. Reads go through these caches and small store-fed indexes, never through whole-cluster scans.
// A generation counts every change a decision reads; the waiter is told which objects changed.
import type { ClusterStore } from '../cluster/store.ts';
import {
  type CSIDriver,
  type CSINode,
  type CSIStorageCapacity,
  DEFAULT_NAMESPACE,
  type Node,
  objectKey,
  type PersistentVolumeClaim,
  type StorageClass,
} from '../cluster/types.ts';
import { feedAssumeCaches, PVAssumeCache, PVCAssumeCache } from './assume-cache.ts';
import { type CapacityAccept, CapacityIndex, type CapacityRowQuery } from './capacity-index.ts';
import type { CAPACITY_ROW_UNDECIDED } from './capacity-rows.ts';
import { InFlightProvisions } from './in-flight.ts';
import type { KeyedWaiter } from './keyed-waiter.ts';
import { facts, nodeHasAccess, nodeHasAccessOf, type ProvisioningSources } from './provisioning.ts';
import { claimKey } from './pv-matching.ts';

function labelsEqual(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b ?? {}).length) return false;
  return ka.every((k) => a![k] === b?.[k]);
}

/** Whether a capacity update keeps the nodes it reaches (else its in-flight claims are attributed anew). */
function sameTopology(a: CSIStorageCapacity, b: CSIStorageCapacity): boolean {
  return JSON.stringify(a.nodeTopology) === JSON.stringify(b.nodeTopology);
}

export class BinderSources implements ProvisioningSources {
  readonly store: ClusterStore;
  readonly pvCache = new PVAssumeCache();
  readonly pvcCache = new PVCAssumeCache();
  /** Provisions the capacity objects do not show yet; kept in both modes (metrics), subtracted in joint mode. */
  readonly inFlight: InFlightProvisions;
  /** Bumped whenever anything a decision reads changes: cached decisions compare it. */
  #generation = 0;
  readonly #capacities = new CapacityIndex({
    reaches: (c, labels) => nodeHasAccess(labels, c),
    bytes: facts,
    owed: (c) => this.inFlight.bytesFor(c),
  });
  /** Binds waiting for the API to show their writes, woken by the objects they read (`Kind/key`). */
  readonly #waiter: KeyedWaiter;
  readonly #unsubscribe: (() => void)[] = [];

  constructor(store: ClusterStore, waiter: KeyedWaiter) {
    this.store = store;
    this.#waiter = waiter;
    this.inFlight = new InFlightProvisions({
      nodeLabels: (name) => {
        const node = this.node(name);
        return node ? (node.metadata.labels ?? {}) : undefined;
      },
      reachingCapacity: (className, labels) => this.#capacities.find(className, labels, nodeHasAccessOf, labels),
      owedChanged: (key) => this.#capacities.owedChanged(key),
    });
  }

  /** Follows the store. `claimChanged`: told of every claim change, after in-flight provisions, before waiters. */
  start(claimChanged: (key: string) => void): void {
    const store = this.store;
    const waiter = this.#waiter;
    this.pvCache.onChange((entry, previous) => {
      this.#generation++;
      waiter.wake(`PersistentVolume/${entry.key}`);
      // A provisioned claim waits for the PV that names it, whatever that PV is called.
      for (const pv of [entry.api, entry.latest, previous]) {
        const ref = pv?.spec.claimRef;
        if (ref?.name)
          waiter.wake(`PersistentVolumeClaim/${claimKey({ metadata: { namespace: ref.namespace, name: ref.name } })}`);
      }
    });
    this.pvcCache.onChange((entry, _previous, deleted) => {
      this.inFlight.claimChanged(entry.key, deleted ? undefined : entry.latest);
      claimChanged(entry.key);
      this.#generation++;
      waiter.wake(`PersistentVolumeClaim/${entry.key}`);
    });
    for (const c of store.list('CSIStorageCapacity')) this.#capacities.upsert(c);
    this.#unsubscribe.push(feedAssumeCaches(store, this.pvCache, this.pvcCache));
    this.#unsubscribe.push(
      store.on('CSIStorageCapacity', (e) => {
        if (e.type === 'delete') this.#capacities.delete(e.obj);
        else this.#capacities.upsert(e.obj);
        if (e.type === 'delete') this.inFlight.capacityRemoved(e.obj);
        else if (e.type === 'add') this.inFlight.capacityAdded(e.obj);
        else if (e.old.storageClassName === e.obj.storageClassName && sameTopology(e.old, e.obj)) {
          this.inFlight.capacityRepublished(e.obj);
        } else {
          this.inFlight.capacityRemoved(e.old);
          this.inFlight.capacityAdded(e.obj);
        }
        this.#generation++; // no bind waits on capacity (checkBindings does not read it)
      }),
      store.on('StorageClass', () => this.#changed()),
      store.on('CSIDriver', () => this.#changed()),
      store.on('CSINode', (e) => {
        this.#generation++;
        waiter.wake(`Node/${e.obj.metadata.name}`);
      }),
      store.on('Node', (e) => {
        if (e.type !== 'update' || !labelsEqual(e.old.metadata.labels, e.obj.metadata.labels)) {
          this.inFlight.nodeChanged(e.obj.metadata.name);
          this.#generation++;
        }
        waiter.wake(`Node/${e.obj.metadata.name}`);
      }),
      store.on('Pod', (e) => {
        // A bind waits for its pod's deletion, and one that lost a claim for another bind's Binding of the pod.
        if (e.type === 'delete' || (e.type === 'update' && e.obj.spec.nodeName && !e.old.spec.nodeName)) {
          waiter.wake(`Pod/${objectKey('Pod', e.obj)}`);
        }
      }),
    );
  }

  close(): void {
    for (const off of this.#unsubscribe.splice(0)) off();
  }

  generation(): number {
    return this.#generation;
  }

  // The provisioning check asks for the same class and driver on every node; the last answer stands until the
  // generation moves (every StorageClass and CSIDriver event bumps it).
  #classMemo: { name: string; at: number; sc: StorageClass | undefined } = { name: '', at: -1, sc: undefined };
  #driverMemo: { name: string; at: number; driver: CSIDriver | undefined } = { name: '', at: -1, driver: undefined };

  storageClass(name: string): StorageClass | undefined {
    const memo = this.#classMemo;
    if (memo.at === this.#generation && memo.name === name) return memo.sc;
    const sc = this.store.get('StorageClass', name);
    this.#classMemo = { name, at: this.#generation, sc };
    return sc;
  }

  csiDriver(name: string): CSIDriver | undefined {
    const memo = this.#driverMemo;
    if (memo.at === this.#generation && memo.name === name) return memo.driver;
    const driver = this.store.get('CSIDriver', name);
    this.#driverMemo = { name, at: this.#generation, driver };
    return driver;
  }

  findCapacity<C>(
    className: string,
    nodeLabels: Readonly<Record<string, string>> | undefined,
    accept: CapacityAccept<C>,
    context: C,
  ): CSIStorageCapacity | undefined {
    return this.#capacities.find(className, nodeLabels, accept, context);
  }

  findCapacityForNode(
    className: string,
    query: CapacityRowQuery,
  ): CSIStorageCapacity | undefined | typeof CAPACITY_ROW_UNDECIDED {
    return this.#capacities.findForNode(className, query);
  }

  node(name: string): Node | undefined {
    return this.store.get('Node', name);
  }

  csiNode(nodeName: string): CSINode | undefined {
    return this.store.get('CSINode', nodeName);
  }

  /** A claim of the namespace, as the PVC assume cache holds it (assumptions included). */
  claim(namespace: string | undefined, name: string): PersistentVolumeClaim | undefined {
    return this.pvcCache.get(`${namespace || DEFAULT_NAMESPACE}/${name}`);
  }

  /** A change any bind may read (a StorageClass, a CSIDriver): every waiting bind checks again. */
  #changed(): void {
    this.#generation++;
    this.#waiter.wakeAll();
  }
}
