// The cluster-state mode's stand-in for the API server: the objects as they are now (file content plus writes), their
// resourceVersions, and delivery of every change to the store as a watch would deliver it.
//
// resourceVersions are integers from one counter, so an edited or written object always gets a newer one than the
// store holds (the assume caches compare them as integers) and an object whose content did not change keeps its own.
import { createHash } from 'node:crypto';
import type { ClusterStore } from '../store.ts';
import { trimObject } from '../trim.ts';
import { type AnyObject, DEFAULT_NAMESPACE, KINDS, type Kind, type KindMap, NAMESPACED, objectKey } from '../types.ts';
import { synthesizeUid } from './normalize.ts';

/**
 * What the last loaded file said about an object, where the current object does not say it: the file's object once a
 * write replaced it, or its fingerprint (a hash of the trimmed object without its resourceVersion) once a reload
 * compared against it. Nothing is held for the objects the file and the current state agree on (most of them, and
 * all of them after the first load): an entry per object of the cluster costs tens of MiB at 15,000 nodes, and
 * hashing them all at start was a tenth of the start time.
 */
type FileEntry = string | AnyObject;

function perKind<T>(make: () => T): Map<Kind, T> {
  return new Map(KINDS.map((k) => [k, make()]));
}

function fingerprint(obj: AnyObject): string {
  const unversioned = { ...obj, metadata: { ...obj.metadata, resourceVersion: '' } };
  return createHash('sha1').update(JSON.stringify(unversioned)).digest('hex');
}

/** The fingerprint of what the file said; `current` is the stored object, the file's own unless a write replaced it. */
function filePrint(file: Map<string, FileEntry>, key: string, current: AnyObject): string {
  const entry = file.get(key);
  if (typeof entry === 'string') return entry;
  const print = fingerprint(entry ?? current);
  file.set(key, print);
  return print;
}

export class ClusterState {
  #store: ClusterStore | undefined;
  #lastResourceVersion = 0;
  #loaded = false;
  readonly #objects = perKind(() => new Map<string, AnyObject>());
  /** What the last loaded file said, where the current object does not say it (see FileEntry). */
  readonly #file = perKind(() => new Map<string, FileEntry>());
  /** Objects written since the file last changed them: a reload keeps the written version. */
  readonly #overlay = perKind(() => new Set<string>());
  /** Of those, the ones only writes created: the last loaded file had every other current object. */
  readonly #writeOnly = perKind(() => new Set<string>());
  #pending: { kind: Kind; obj: AnyObject }[] = [];
  #drained: (() => void)[] = [];

  /** The current object. Shared, not copied: commit a modified copy instead of mutating it. */
  get<K extends Kind>(kind: K, key: string): KindMap[K] | undefined {
    return this.#map(kind).get(key);
  }

  /** Current objects of a kind, in a stable (insertion) order. Shared like `get`. */
  list<K extends Kind>(kind: K): KindMap[K][] {
    return [...this.#map(kind).values()];
  }

  count(kind: Kind): number {
    return this.#map(kind).size;
  }

  nextResourceVersion(): string {
    this.#lastResourceVersion++;
    return String(this.#lastResourceVersion);
  }

  /**
   * Stores a written or created object under a fresh resourceVersion (callers check preconditions first; a missing
   * uid or namespace is filled in as the loader does) and returns it as stored.
   * The store hears of it on a later turn of the event loop, like a watch event arriving after the API response.
   */
  commit<K extends Kind>(kind: K, obj: KindMap[K]): KindMap[K] {
    const stored = trimObject(kind, structuredClone(obj));
    const meta = stored.metadata;
    if (NAMESPACED.has(kind)) meta.namespace ||= DEFAULT_NAMESPACE;
    meta.uid ||= synthesizeUid(kind, meta.namespace, meta.name); // objects created in tests often carry none
    meta.resourceVersion = this.nextResourceVersion();
    const key = objectKey(kind, stored);
    const overlay = this.#overlay.get(kind)!;
    if (!overlay.has(key)) {
      // The first write over the file's object: keep that object for the fingerprint a reload compares.
      const current = this.#map(kind).get(key);
      const file = this.#file.get(kind)!;
      if (current === undefined) this.#writeOnly.get(kind)!.add(key);
      else if (!file.has(key)) file.set(key, current);
    }
    this.#map(kind).set(key, stored);
    overlay.add(key);
    if (this.#store) this.#enqueue(kind, stored);
    return stored;
  }

  /**
   * Applies a freshly parsed file. Objects the file did not change keep their version (and any written version);
   * objects it added, changed or removed take the file's word, written or not; objects only writes created stay.
   */
  applyFile(objects: ReadonlyMap<Kind, readonly AnyObject[]>): void {
    if (!this.#loaded) {
      // The first load honours the file's own integer resourceVersions; the counter continues above them.
      for (const items of objects.values()) {
        for (const item of items) {
          const rv = Number(item.metadata.resourceVersion || 0);
          if (rv > this.#lastResourceVersion) this.#lastResourceVersion = rv;
        }
      }
    }
    for (const kind of KINDS) this.#applyKind(kind, objects.get(kind) ?? []);
    this.#loaded = true;
    if (this.#store) for (const kind of KINDS) this.#store.replace(kind, this.#map(kind));
  }

  /** Fills the store with the current objects (every kind becomes synced) and delivers later changes to it. */
  attach(store: ClusterStore): void {
    this.#store = store;
    for (const kind of KINDS) store.replace(kind, this.#map(kind));
  }

  /** Resolves once every committed write has reached the store. */
  delivered(): Promise<void> {
    if (this.#pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  #applyKind(kind: Kind, items: readonly AnyObject[]): void {
    const current = this.#map(kind);
    const previousFile = this.#file.get(kind)!;
    const overlay = this.#overlay.get(kind)!;
    const writeOnly = this.#writeOnly.get(kind)!;
    const nextFile = new Map<string, FileEntry>();
    const next = new Map<string, AnyObject>();
    for (const item of items) {
      const obj = trimObject(kind, item);
      const key = objectKey(kind, obj);
      const existing = current.get(key);
      // Only a reload compares (the first load hashes nothing), and only what the previous file had.
      const print = existing && !writeOnly.has(key) ? fingerprint(obj) : undefined;
      if (existing && print !== undefined && filePrint(previousFile, key, existing) === print) {
        nextFile.set(key, print);
        next.set(key, existing); // unchanged in the file: keep what is stored, written or not
        continue;
      }
      overlay.delete(key);
      writeOnly.delete(key);
      const rv =
        !this.#loaded && obj.metadata.resourceVersion ? obj.metadata.resourceVersion : this.nextResourceVersion();
      obj.metadata.resourceVersion = rv;
      if (print !== undefined) nextFile.set(key, print);
      next.set(key, obj);
    }
    for (const key of [...overlay]) {
      if (next.has(key)) continue;
      if (!writeOnly.has(key))
        overlay.delete(key); // the file removed it
      else next.set(key, current.get(key)!); // created by a write; the file never had it
    }
    this.#objects.set(kind, next);
    this.#file.set(kind, nextFile);
  }

  #enqueue(kind: Kind, obj: AnyObject): void {
    if (this.#pending.length === 0) setImmediate(() => this.#flush());
    this.#pending.push({ kind, obj });
  }

  #flush(): void {
    const pending = this.#pending;
    this.#pending = [];
    const store = this.#store!;
    for (const { kind, obj } of pending) {
      const key = objectKey(kind, obj);
      if (!this.#map(kind).has(key)) continue; // removed by a reload since the write
      const seen = store.get(kind, key);
      // A reload's replace may already have delivered this version or a newer one.
      if (seen && Number(seen.metadata.resourceVersion) >= Number(obj.metadata.resourceVersion)) continue;
      store.upsert(kind, obj);
    }
    if (this.#pending.length > 0) return; // a handler wrote again; its flush resolves the waiters
    const drained = this.#drained;
    this.#drained = [];
    for (const resolve of drained) resolve();
  }

  #map<K extends Kind>(kind: K): Map<string, KindMap[K]> {
    return this.#objects.get(kind) as Map<string, KindMap[K]>;
  }
}
