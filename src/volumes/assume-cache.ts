// Assume caches (upstream pkg/scheduler/util/assumecache): per object the latest version, possibly assumed by a
// reserve that has not been written yet, and the last version the API delivered. Informer events never move an
// entry backwards, so a resync cannot clobber an assumption; restore() drops the assumption.
import type { ClusterStore } from '../cluster/store.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../cluster/types.ts';
import { FreePVRows, ROW_UNDECIDED, type RowContent } from './free-pv-rows.ts';
import { affinityIndexEntries, type IndexEntries, matchNodeSelectorTerms } from './node-affinity.ts';
import {
  type ClaimMatchInput,
  claimKey,
  type FreePV,
  FreePVBucket,
  findPreBoundVolume,
  freePV,
  type PVNames,
  pvClass,
  refreshFreePV,
  smallestFreePV,
  UNDECIDED,
} from './pv-matching.ts';

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

  /** How many entries hold an assumption (a walk over every entry: for scrapes, not for decisions). */
  assumedCount(): number {
    let n = 0;
    for (const entry of this.#entries.values()) if (entry.latest !== entry.api) n++;
    return n;
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

/**
 * Indexes of one storage class. The topology buckets hold only the PVs an unbound claim could take (see
 * `offeredToAnyClaim`): by the node-label values their affinity requires, or unindexed when no such key exists.
 */
interface ClassIndex {
  /** Node label key → label value → the free PVs whose affinity requires it (a node is looked up once per key). */
  readonly byTopology: Map<string, Map<string, FreePVBucket>>;
  /**
   * Bumped when a bucket is made: every node's buckets (below) are then looked up again. Buckets are never dropped,
   * so a node's list stays valid until then (an empty bucket costs a few bytes per topology value seen).
   */
  version: number;
  /**
   * Per node labels object, the buckets that node reads, found once and reused by every claim and request until the
   * node's labels or the buckets change: a 5,000-entry map looked up by label value for each claim on each node cost
   * more than the walk of the bucket itself.
   */
  readonly byNode: WeakMap<Readonly<Record<string, string>>, NodeBuckets>;
  readonly unindexed: Set<FreePV>;
  /** Every PV of the class (ListPVs), in insertion order, bound or not. */
  readonly all: Set<AssumeEntry<PersistentVolume>>;
  /** The free PVs each node can take, one dense row per node ordinal, built from the buckets above. */
  readonly rows: FreePVRows;
}

interface IndexedAs {
  className: string;
  /** Whether the PV sits in the topology buckets (offered to any claim). */
  offered: boolean;
  /** Topology entries; only meaningful (and only computed) when offered. */
  entries: IndexEntries | undefined;
  claim: string | undefined;
  /** The record in the topology buckets, when offered. */
  free?: FreePV;
}

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/** The topology buckets a node reads, and the label key each was found by. */
interface NodeBuckets {
  version: number;
  keys: string[];
  buckets: FreePVBucket[];
}

function nodeBuckets(index: ClassIndex, labels: Readonly<Record<string, string>>): NodeBuckets {
  let found = index.byNode.get(labels);
  if (found?.version === index.version) return found;
  found = { version: index.version, keys: [], buckets: [] };
  for (const [key, byValue] of index.byTopology) {
    const bucket = Object.hasOwn(labels, key) ? byValue.get(labels[key]) : undefined;
    if (!bucket) continue;
    found.keys.push(key);
    found.buckets.push(bucket);
  }
  index.byNode.set(labels, found);
  return found;
}

/**
 * A node's free PVs of the class in the order FindMatchingVolume's walk meets them (see PVAssumeCache.findMatching-
 * Volume): smallest first; among equal capacities, by the node's bucket order (the unindexed PVs last), then by
 * arrival. PVs whose affinity does not hold on the node are left out: no claim can take them there.
 */
function rowContent(index: ClassIndex, labels: Readonly<Record<string, string>>): RowContent {
  const { keys, buckets } = nodeBuckets(index, labels);
  const group = new Map<FreePV, number>();
  const consider = (slot: FreePV, g: number, bucketKey: string | undefined) => {
    if (group.has(slot)) return;
    const matches =
      slot.affinity === undefined ||
      (bucketKey !== undefined && slot.impliedByKey === bucketKey) ||
      matchNodeSelectorTerms(slot.affinity, labels);
    group.set(slot, matches ? g : -1);
  };
  for (let i = 0; i < buckets.length; i++) for (const slot of buckets[i].slots) consider(slot, i, keys[i]);
  for (const slot of index.unindexed) consider(slot, buckets.length, undefined);
  const slots = [...group].filter(([, g]) => g >= 0).map(([slot]) => slot);
  slots.sort((a, b) => a.capacity - b.capacity || group.get(a)! - group.get(b)! || a.seq - b.seq);
  return { slots, buckets };
}

/**
 * Whether FindMatchingVolume could pick this PV for a claim it is not (pre)bound to: no claimRef at all (one to
 * another claim is skipped; one to the claim itself is found through the by-claim index), phase Available (upstream
 * skips unbound PVs in any other phase) and not being deleted (skipped for every claim). Bound and assumed PVs are
 * thereby kept out of the topology buckets, so a node's walk costs its free PVs, not every PV of its zone.
 */
export function offeredToAnyClaim(pv: PersistentVolume): boolean {
  return !pv.spec.claimRef && pv.status?.phase === 'Available' && !pv.metadata.deletionTimestamp;
}

/**
 * The PV assume cache, indexed by storage class, by node topology within a class (free PVs only), and by the claim
 * a PV is (pre)bound to. Indexes follow the latest (possibly assumed) object: assuming a PV to a claim moves it from
 * the topology buckets to the by-claim index, restoring or an informer update that clears its claimRef moves it back.
 */
export class PVAssumeCache extends AssumeCache<PersistentVolume> {
  readonly #classes = new Map<string, ClassIndex>();
  readonly #byClaim = new Map<string, Set<AssumeEntry<PersistentVolume>>>();
  readonly #indexedAs = new WeakMap<AssumeEntry<PersistentVolume>, IndexedAs>();
  /** Arrival order of free PVs into the topology buckets. */
  #seq = 0;

  constructor() {
    super('v1.PersistentVolume', (pv) => pv.metadata.name);
    this.onChange((entry, _previous, deleted) => this.#reindex(entry, deleted));
  }

  /** The PV the API says was made for the claim with this uid (`namespace/name` key): its claimRef names it. */
  apiVolumeClaimedBy(claim: string, uid: string): PersistentVolume | undefined {
    for (const e of this.#byClaim.get(claim) ?? []) if (e.api.spec.claimRef?.uid === uid) return e.api;
    return undefined;
  }

  /**
   * The PVs of a class FindMatchingVolume could pick for `claim` on a node with these labels: those (pre)bound to
   * `claim` first, then the free ones (no claimRef, Available, not being deleted) whose affinity can hold there. Every
   * other PV of the class is one upstream's scan would skip for this claim on this node.
   */
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
    const labels = nodeLabels ?? NO_LABELS;
    for (const [key, byValue] of index.byTopology) {
      if (!Object.hasOwn(labels, key)) continue;
      const bucket = byValue.get(labels[key]);
      if (bucket) for (const slot of bucket.slots) yield slot.pv;
    }
    for (const slot of index.unindexed) yield slot.pv;
  }

  /**
   * FindMatchingVolume for one claim on a node with these labels, over the indexes: the same answer as
   * `findMatchingVolume(input, candidates(...))` (and as upstream's scan of the whole class), without a generator and
   * reading free PVs from their flat records. Throws SelectorError on an invalid claim selector.
   */
  findMatchingVolume(
    input: ClaimMatchInput,
    nodeLabels: Readonly<Record<string, string>> | undefined,
    excluded: PVNames,
    /** The node's NodeInfo.ordinal, when known (a NodeInfo outside the cache has -1): its dense row may answer. */
    ordinal?: number,
  ): PersistentVolume | undefined {
    const preBound = this.#byClaim.get(input.claimRefKey);
    if (preBound) {
      const decided = findPreBoundVolume(input, latestOf(preBound), nodeLabels, excluded);
      if (decided !== UNDECIDED) return decided;
    }
    const index = this.#classes.get(input.className);
    if (!index) return undefined;
    const labels = nodeLabels ?? NO_LABELS;
    // The node's row answers a claim without selector (a selector's errors and label checks are the walk's).
    if (ordinal !== undefined && ordinal >= 0 && input.pvc.spec.selector === undefined) {
      const found = index.rows.find(ordinal, labels, input, excluded);
      if (found !== ROW_UNDECIDED) return found;
    }
    let best: FreePV | undefined;
    const { keys, buckets } = nodeBuckets(index, labels);
    for (let i = 0; i < buckets.length; i++) best = buckets[i].smallest(input, keys[i], labels, excluded, best);
    if (index.unindexed.size > 0) best = smallestFreePV(input, index.unindexed, undefined, labels, excluded, best);
    return best?.pv;
  }

  /** Whether some PV's claimRef names the claim `namespace/name` (bound or pre-bound to it, assumed included). */
  referencesClaim(claimKey: string): boolean {
    return this.#byClaim.has(claimKey);
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
    let next: IndexedAs | undefined;
    if (!deleted) {
      const offered = offeredToAnyClaim(pv);
      next = {
        className: pvClass(pv),
        offered,
        entries: offered ? affinityIndexEntries(pv) : undefined,
        claim: ref?.name ? `${ref.namespace ?? ''}/${ref.name}` : undefined,
        free: undefined, // set by #index: named here so that it lives in the object, not in an array beside it
      };
    }
    if (
      old &&
      next &&
      old.className === next.className &&
      old.claim === next.claim &&
      old.offered === next.offered &&
      (!next.offered || sameEntries(old.entries, next.entries))
    ) {
      if (old.free) this.#refresh(old, pv); // same buckets, fresh fields
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

  /** New fields of a PV that stays in the same buckets; a resized PV moves to its new place in each bucket. */
  #refresh(as: IndexedAs, pv: PersistentVolume): void {
    const free = as.free!;
    const before = free.capacity;
    refreshFreePV(free, pv);
    const index = this.#classes.get(as.className);
    if (as.entries === undefined) {
      index?.rows.staleAll();
      return;
    }
    for (const [key, value] of as.entries) {
      const bucket = index?.byTopology.get(key)?.get(value);
      if (free.capacity === before) bucket?.changed();
      else if (bucket?.delete(free)) bucket.add(free);
    }
  }

  #index(entry: AssumeEntry<PersistentVolume>, as: IndexedAs): void {
    let index = this.#classes.get(as.className);
    if (!index) {
      const made: ClassIndex = {
        byTopology: new Map(),
        version: 0,
        byNode: new WeakMap(),
        unindexed: new Set(),
        all: new Set(),
        rows: new FreePVRows((labels) => rowContent(made, labels)),
      };
      index = made;
      this.#classes.set(as.className, index);
    }
    index.all.add(entry);
    // A PV that is not offered is reachable through `all` (ListPVs) and, when it names a claim, the by-claim index.
    if (as.offered) {
      as.free = freePV(entry.latest);
      as.free.seq = this.#seq++;
    }
    if (as.free && as.entries === undefined) {
      index.unindexed.add(as.free);
      index.rows.staleAll();
    } else if (as.free && as.entries !== undefined) {
      for (const [key, value] of as.entries) {
        let byValue = index.byTopology.get(key);
        if (!byValue) {
          byValue = new Map();
          index.byTopology.set(key, byValue);
        }
        let bucket = byValue.get(value);
        if (!bucket) {
          bucket = new FreePVBucket(index.rows);
          byValue.set(value, bucket);
          index.version++;
          index.rows.staleAll();
        }
        bucket.add(as.free);
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
      if (as.free && as.entries === undefined) {
        index.unindexed.delete(as.free);
        index.rows.staleAll();
      } else if (as.free && as.entries !== undefined) {
        for (const [key, value] of as.entries) {
          const byValue = index.byTopology.get(key);
          const bucket = byValue?.get(value);
          // An emptied bucket stays (see ClassIndex.byNode): binding a node's last free PV must not make every
          // node look its buckets up again.
          bucket?.delete(as.free);
        }
      }
      if (index.all.size === 0) this.#classes.delete(as.className);
    }
    if (as.claim !== undefined) {
      const set = this.#byClaim.get(as.claim);
      if (set?.delete(entry) && set.size === 0) this.#byClaim.delete(as.claim);
    }
  }

  /** How many PVs of a class sit in its topology buckets (free PVs): what the index's tests check. */
  offeredSize(className: string): number {
    const index = this.#classes.get(className);
    if (!index) return 0;
    const seen = new Set<FreePV>(index.unindexed);
    for (const byValue of index.byTopology.values()) {
      for (const bucket of byValue.values()) for (const e of bucket.slots) seen.add(e);
    }
    return seen.size;
  }
}

function* latestOf(entries: Iterable<AssumeEntry<PersistentVolume>>): Generator<PersistentVolume> {
  for (const e of entries) yield e.latest;
}

function sameEntries(a: IndexEntries | undefined, b: IndexEntries | undefined): boolean {
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
