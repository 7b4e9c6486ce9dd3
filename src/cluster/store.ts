// The store holds the latest trimmed object of every kind the extender watches and tells subscribers what changed,
// in the order a watch would deliver it. Sources (cluster-state file, live informers) are its only writers.
import { trimObject } from './trim.ts';
import { KINDS, type Kind, type KindMap, objectKey } from './types.ts';

export type StoreEvent<K extends Kind = Kind> =
  | { type: 'add'; kind: K; obj: KindMap[K] }
  | { type: 'update'; kind: K; obj: KindMap[K]; old: KindMap[K] }
  | { type: 'delete'; kind: K; obj: KindMap[K] };

export type StoreHandler<K extends Kind = Kind> = (event: StoreEvent<K>) => void;

export class ClusterStore {
  readonly #objects = new Map<Kind, Map<string, KindMap[Kind]>>(KINDS.map((k) => [k, new Map()]));
  readonly #handlers = new Map<Kind, Set<StoreHandler<Kind>>>(KINDS.map((k) => [k, new Set()]));
  readonly #synced = new Set<Kind>();
  /** Wall-clock time (ms) of the last change per kind; the readiness probe and metrics read it. */
  readonly lastChange = new Map<Kind, number>();
  readonly #onHandlerError: (err: unknown, event: StoreEvent) => void;

  /**
   * With `onHandlerError` (the extender's wiring passes the log), a subscriber that throws starves neither the others
   * nor the source that delivered the event: its error goes there and delivery goes on. Without it (tests, analyze,
   * what-if) the error is rethrown: the later subscribers miss the event and the write that emitted it throws, its
   * object already stored.
   */
  constructor(options: { onHandlerError?: (err: unknown, event: StoreEvent) => void } = {}) {
    this.#onHandlerError =
      options.onHandlerError ??
      ((err) => {
        throw err;
      });
  }

  get<K extends Kind>(kind: K, key: string): KindMap[K] | undefined {
    return this.#map(kind).get(key);
  }

  list<K extends Kind>(kind: K): IterableIterator<KindMap[K]> {
    return this.#map(kind).values();
  }

  count(kind: Kind): number {
    return this.#map(kind).size;
  }

  /** Subscribe to one kind's events; returns the unsubscribe function. */
  on<K extends Kind>(kind: K, handler: StoreHandler<K>): () => void {
    const set = this.#handlers.get(kind)!;
    set.add(handler as StoreHandler<Kind>);
    return () => set.delete(handler as StoreHandler<Kind>);
  }

  /**
   * Add or update from a watch event or a list item. An unchanged resourceVersion is a resync: no event. `key` is
   * objectKey's for `raw`, when the caller holds it already: a new entry then shares that string.
   */
  upsert<K extends Kind>(kind: K, raw: KindMap[K], key = objectKey(kind, raw)): void {
    const obj = trimObject(kind, raw);
    const map = this.#map(kind);
    const old = map.get(key);
    if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return;
    map.set(key, obj);
    this.#emit(old ? { type: 'update', kind, obj, old } : { type: 'add', kind, obj });
  }

  /** Delete by object (a watch DELETED event carries the last state). Unknown objects are ignored. */
  delete<K extends Kind>(kind: K, raw: { metadata: { name: string; namespace?: string } }): void {
    const key = objectKey(kind, raw);
    const map = this.#map(kind);
    const old = map.get(key);
    if (!old) return;
    map.delete(key);
    this.#emit({ type: 'delete', kind, obj: old });
  }

  /**
   * Replace a kind's whole content with a fresh list (initial list, relist after 410 Gone, edited cluster-state file):
   * objects that vanished are deleted, new ones added, changed ones updated, and the kind counts as synced. A Map is
   * read as objects by their keys.
   */
  replace<K extends Kind>(kind: K, items: Iterable<KindMap[K]> | ReadonlyMap<string, KindMap[K]>): void {
    let seen: { has(key: string): boolean };
    if (items instanceof Map) {
      // By the source's own keys (the cluster-state file's objects): the store's entries share those strings.
      for (const [key, item] of items as ReadonlyMap<string, KindMap[K]>) this.upsert(kind, item, key);
      seen = items;
    } else {
      const keys = new Set<string>();
      for (const item of items as Iterable<KindMap[K]>) {
        const key = objectKey(kind, item);
        keys.add(key);
        this.upsert(kind, item, key);
      }
      seen = keys;
    }
    for (const [key, obj] of [...this.#map(kind)]) {
      if (!seen.has(key)) this.delete(kind, obj);
    }
    this.#synced.add(kind);
  }

  markSynced(kind: Kind): void {
    this.#synced.add(kind);
  }

  isSynced(kind: Kind): boolean {
    return this.#synced.has(kind);
  }

  unsyncedKinds(): Kind[] {
    return KINDS.filter((k) => !this.#synced.has(k));
  }

  #map<K extends Kind>(kind: K): Map<string, KindMap[K]> {
    return this.#objects.get(kind) as Map<string, KindMap[K]>;
  }

  #emit(event: StoreEvent): void {
    this.lastChange.set(event.kind, Date.now());
    for (const handler of this.#handlers.get(event.kind)!) {
      try {
        handler(event);
      } catch (err) {
        this.#onHandlerError(err, event);
      }
    }
  }
}
