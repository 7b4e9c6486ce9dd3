// Assume caches (upstream pkg/scheduler/util/assumecache): per object the latest version, possibly assumed by a
// reserve that has not been written yet, and the last version the API delivered. Informer events never move an
// entry backwards, so a resync cannot clobber an assumption; restore() drops the assumption.
import type { ClusterStore } from '../cluster/store.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../cluster/types.ts';
import { affinityIndexEntries } from './node-affinity.ts';
import { claimKey, pvClass } from './pv-matching.ts';

interface Versioned {
  metadata: { name: string; namespace?: string; resourceVersion: string };
}

export interface AssumeEntry<T> {
  readonly key: string;
  latest: T;
  api: T;
}

export class AssumeCacheError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AssumeCacheError';
  }
}

function resourceVersion(description: string, key: string, obj: Versioned): number {
  const rv = obj.metadata.resourceVersion;
  if (!/^\d+$/.test(rv ?? '')) {
    throw new AssumeCacheError(`error parsing ResourceVersion "${rv}" for ${description} "${key}"`);
  }
  return Number(rv);
}

export class AssumeCache<T extends Versioned> {
  readonly description: string;
  readonly #keyOf: (obj: T) => string;
  readonly #entries = new Map<string, AssumeEntry<T>>();
  readonly #listeners = new Set<(entry: AssumeEntry<T>, previous: T | undefined, deleted: boolean) => void>();

  constructor(description: string, keyOf: (obj: T) => string) {
    this.description = description;
    this.#keyOf = keyOf;
  }

  /** Called after every change of an entry's latest object (add, newer update, assume, restore, delete). */
  onChange(listener: (entry: AssumeEntry<T>, previous: T | undefined, deleted: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Informer add/update: ignored unless strictly newer than the latest (assumed) version. */
  add(obj: T): void {
    const key = this.#keyOf(obj);
    const entry = this.#entries.get(key);
    if (entry) {
      try {
        if (resourceVersion(this.description, key, obj) <= resourceVersion(this.description, key, entry.latest)) return;
      } catch {
        return; // upstream logs and drops an update whose version does not parse
      }
    }
    if (entry) {
      const previous = entry.latest;
      entry.latest = obj;
      entry.api = obj;
      this.#emit(entry, previous, false);
    } else {
      const created: AssumeEntry<T> = { key, latest: obj, api: obj };
      this.#entries.set(key, created);
      this.#emit(created, undefined, false);
    }
  }

  delete(obj: T): void {
    const key = this.#keyOf(obj);
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#emit(entry, entry.latest, true);
  }

  get(key: string): T | undefined {
    return this.#entries.get(key)?.latest;
  }

  getAPI(key: string): T | undefined {
    return this.#entries.get(key)?.api;
  }

  entry(key: string): AssumeEntry<T> | undefined {
    return this.#entries.get(key);
  }

  /** Updates the in-memory object only; it must exist and must not be older than the latest one. */
  assume(obj: T): void {
    const key = this.#keyOf(obj);
    const entry = this.#entries.get(key);
    if (!entry) throw new AssumeCacheError(`could not find ${this.description} "${key}"`);
    const newVersion = resourceVersion(this.description, key, obj);
    const storedVersion = resourceVersion(this.description, key, entry.latest);
    if (newVersion < storedVersion) {
      throw new AssumeCacheError(
        `${this.description} "${key}" is out of sync (stored: ${storedVersion}, assume: ${newVersion})`,
      );
    }
    const previous = entry.latest;
    entry.latest = obj;
    this.#emit(entry, previous, false);
  }

  /** Back to the API's version; a missing entry (deleted meanwhile) is not an error. */
  restore(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry || entry.latest === entry.api) return;
    const previous = entry.latest;
    entry.latest = entry.api;
    this.#emit(entry, previous, false);
  }

  isAssumed(key: string): boolean {
    const entry = this.#entries.get(key);
    return entry !== undefined && entry.latest !== entry.api;
  }

  values(): IterableIterator<AssumeEntry<T>> {
    return this.#entries.values();
  }

  get size(): number {
    return this.#entries.size;
  }

  #emit(entry: AssumeEntry<T>, previous: T | undefined, deleted: boolean): void {
    for (const listener of this.#listeners) listener(entry, previous, deleted);
  }
}

/** Indexes of one storage class: PVs by the node-label values their affinity requires, and those with no such key. */
interface ClassIndex {
  readonly byTopology: Map<string, Set<AssumeEntry<PersistentVolume>>>;
  /** Label keys used by byTopology, with how many PVs use each (a node is looked up once per key). */
  readonly keys: Map<string, number>;
  readonly unindexed: Set<AssumeEntry<PersistentVolume>>;
  /** Every PV of the class (ListPVs), in insertion order. */
  readonly all: Set<AssumeEntry<PersistentVolume>>;
}

interface IndexedAs {
  className: string;
  entries: [string, string][] | undefined;
  claim: string | undefined;
}

const topologyKey = (key: string, value: string) => `${key}\u0000${value}`;

/**
 * The PV assume cache, indexed by storage class, by node topology within a class, and by the claim a PV is
 * (pre)bound to. Indexes follow the latest (possibly assumed) object.
 */
export class PVAssumeCache extends AssumeCache<PersistentVolume> {
  readonly #classes = new Map<string, ClassIndex>();
  readonly #byClaim = new Map<string, Set<AssumeEntry<PersistentVolume>>>();
  readonly #indexedAs = new WeakMap<AssumeEntry<PersistentVolume>, IndexedAs>();

  constructor() {
    super('v1.PersistentVolume', (pv) => pv.metadata.name);
    this.onChange((entry, _previous, deleted) => this.#reindex(entry, deleted));
  }

  /** PVs of a class that could fit a node with these labels: those pre-bound to `claim` first, then by topology. */
  *candidates(
    className: string,
    nodeLabels: Readonly<Record<string, string>> | undefined,
    claim?: string,
  ): Generator<PersistentVolume> {
    if (claim !== undefined) {
      for (const e of this.#byClaim.get(claim) ?? []) {
        if (pvClass(e.latest) === className) yield e.latest;
      }
    }
    const index = this.#classes.get(className);
    if (!index) return;
    const labels = nodeLabels ?? {};
    for (const key of index.keys.keys()) {
      if (!Object.hasOwn(labels, key)) continue;
      const bucket = index.byTopology.get(topologyKey(key, labels[key]));
      if (bucket) for (const e of bucket) yield e.latest;
    }
    for (const e of index.unindexed) yield e.latest;
  }

  /** Every PV of a class (ListPVs). */
  *listByClass(className: string): Generator<PersistentVolume> {
    for (const e of this.#classes.get(className)?.all ?? []) yield e.latest;
  }

  classSize(className: string): number {
    return this.#classes.get(className)?.all.size ?? 0;
  }

  #reindex(entry: AssumeEntry<PersistentVolume>, deleted: boolean): void {
    const pv = entry.latest;
    const old = this.#indexedAs.get(entry);
    const ref = pv.spec.claimRef;
    const next: IndexedAs | undefined = deleted
      ? undefined
      : {
          className: pvClass(pv),
          entries: affinityIndexEntries(pv),
          claim: ref?.name ? `${ref.namespace ?? ''}/${ref.name}` : undefined,
        };
    if (
      old &&
      next &&
      old.className === next.className &&
      old.claim === next.claim &&
      sameEntries(old.entries, next.entries)
    ) {
      return;
    }
    if (old) this.#unindex(entry, old);
    if (next) {
      this.#index(entry, next);
      this.#indexedAs.set(entry, next);
    } else {
      this.#indexedAs.delete(entry);
    }
  }

  #index(entry: AssumeEntry<PersistentVolume>, as: IndexedAs): void {
    let index = this.#classes.get(as.className);
    if (!index) {
      index = { byTopology: new Map(), keys: new Map(), unindexed: new Set(), all: new Set() };
      this.#classes.set(as.className, index);
    }
    index.all.add(entry);
    if (as.entries === undefined) {
      index.unindexed.add(entry);
    } else {
      for (const [key, value] of as.entries) {
        const k = topologyKey(key, value);
        let bucket = index.byTopology.get(k);
        if (!bucket) {
          bucket = new Set();
          index.byTopology.set(k, bucket);
        }
        bucket.add(entry);
        index.keys.set(key, (index.keys.get(key) ?? 0) + 1);
      }
    }
    if (as.claim !== undefined) {
      let set = this.#byClaim.get(as.claim);
      if (!set) {
        set = new Set();
        this.#byClaim.set(as.claim, set);
      }
      set.add(entry);
    }
  }

  #unindex(entry: AssumeEntry<PersistentVolume>, as: IndexedAs): void {
    const index = this.#classes.get(as.className);
    if (index) {
      index.all.delete(entry);
      if (as.entries === undefined) {
        index.unindexed.delete(entry);
      } else {
        for (const [key, value] of as.entries) {
          const k = topologyKey(key, value);
          const bucket = index.byTopology.get(k);
          if (bucket?.delete(entry) && bucket.size === 0) index.byTopology.delete(k);
          const n = (index.keys.get(key) ?? 1) - 1;
          if (n <= 0) index.keys.delete(key);
          else index.keys.set(key, n);
        }
      }
      if (index.all.size === 0) this.#classes.delete(as.className);
    }
    if (as.claim !== undefined) {
      const set = this.#byClaim.get(as.claim);
      if (set?.delete(entry) && set.size === 0) this.#byClaim.delete(as.claim);
    }
  }
}

function sameEntries(a: [string, string][] | undefined, b: [string, string][] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.length !== b.length) return false;
  return a.every(([k, v], i) => b[i][0] === k && b[i][1] === v);
}

export class PVCAssumeCache extends AssumeCache<PersistentVolumeClaim> {
  constructor() {
    super('v1.PersistentVolumeClaim', claimKey);
  }
}

/** Feeds both caches from the store (and replays what it already holds). Returns the unsubscribe function. */
export function feedAssumeCaches(store: ClusterStore, pvs: PVAssumeCache, pvcs: PVCAssumeCache): () => void {
  for (const pv of store.list('PersistentVolume')) pvs.add(pv);
  for (const pvc of store.list('PersistentVolumeClaim')) pvcs.add(pvc);
  const offPV = store.on('PersistentVolume', (e) => (e.type === 'delete' ? pvs.delete(e.obj) : pvs.add(e.obj)));
  const offPVC = store.on('PersistentVolumeClaim', (e) => (e.type === 'delete' ? pvcs.delete(e.obj) : pvcs.add(e.obj)));
  return () => {
    offPV();
    offPVC();
  };
}
