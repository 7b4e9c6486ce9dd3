// CSIStorageCapacity by storage class and by the node topology its nodeTopology selector pins (hostname, else zone),
// so a node finds the capacities that can reach it in O(1) instead of matching every selector of the class. Local
// storage drivers publish one capacity per node: scanning them all cost 5,000 selector matches per node per claim.
// Selectors that pin neither key sit in a per-class list every node scans. Lookups answer exactly as a scan of the
// class in arrival order would (an update counts as a new arrival): the first accepted capacity in that order.

import type { CSIStorageCapacity, LabelSelector } from '../cluster/types.ts';
import { LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE } from '../cluster/well-known-labels.ts';
import { CAPACITY_ROW_UNDECIDED, type CapacityBytes, CapacityRows } from './capacity-rows.ts';

/** Label keys a selector may pin, most selective first: a capacity is indexed under the first one it pins. */
const PINNABLE_KEYS = [LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE] as const;

interface Entry {
  /** Arrival order: the scan order lookups reproduce. */
  seq: number;
  capacity: CSIStorageCapacity;
  /**
   * The selector requires nothing but the pinned key's value: a node that found the entry in the bucket of its own
   * value is reached, without matching the selector again (a local-storage driver's `hostname: node` selector).
   */
  reachesBucketNodes: boolean;
  /** Where the entry sits (several buckets for `In` with several values), for removal. */
  places: Place[];
}

interface Place {
  bucket: Entry[];
}

interface ClassIndex {
  /** key → value → entries sorted by seq. */
  pinned: Map<string, Map<string, Entry[]>>;
  /**
   * Bumped when a pinned bucket is made: every node's buckets (below) are then looked up again. Buckets are never
   * dropped, so a node's list stays valid until then (an empty bucket costs a few bytes per topology value seen).
   */
  version: number;
  /** Per node labels object, the pinned buckets that node reads: found once, not once per claim and request. */
  byNode: WeakMap<Readonly<Record<string, string>>, NodeBuckets>;
  /** Selectors that pin no key of PINNABLE_KEYS, sorted by seq. */
  unpinned: Entry[];
  size: number;
  /** The capacities reaching each node, one dense row per node ordinal (when the index was given RowSources). */
  rows: CapacityRows | undefined;
  /** Per bucket, the ordinals of the rows built from it. */
  readers: WeakMap<Entry[], Set<number>>;
}

/** What the dense rows need beyond the index: the selector match, the parsed quantities and the in-flight bytes. */
export interface RowSources {
  /** Whether the capacity's nodeTopology matches the labels (nodeHasAccess). */
  reaches(capacity: CSIStorageCapacity, labels: Readonly<Record<string, string>>): boolean;
  bytes(capacity: CSIStorageCapacity): CapacityBytes;
  /** Bytes provisions in flight owe the capacity object. */
  owed(capacity: CSIStorageCapacity): number;
}

/**
 * The values a selector allows for `key` when it pins the key (matchLabels, or an `In` expression); undefined when
 * it does not. A node whose label is not among them cannot match, so the capacity need not be seen by it.
 */
function pinnedValues(selector: LabelSelector, key: string): string[] | undefined {
  if (selector.matchLabels && Object.hasOwn(selector.matchLabels, key)) return [selector.matchLabels[key]];
  for (const req of selector.matchExpressions ?? []) {
    if (req.key === key && req.operator === 'In') return [...new Set(req.values ?? [])];
  }
  return undefined;
}

/** The pinned buckets a node's labels select. */
interface NodeBuckets {
  version: number;
  buckets: Entry[][];
}

function nodeBuckets(cls: ClassIndex, labels: Readonly<Record<string, string>>): NodeBuckets {
  let found = cls.byNode.get(labels);
  if (found?.version === cls.version) return found;
  found = { version: cls.version, buckets: [] };
  for (const [key, byValue] of cls.pinned) {
    const bucket = Object.hasOwn(labels, key) ? byValue.get(labels[key]) : undefined;
    if (bucket) found.buckets.push(bucket);
  }
  cls.byNode.set(labels, found);
  return found;
}

function objectKeyOf(c: CSIStorageCapacity): string {
  return `${c.metadata.namespace ?? ''}/${c.metadata.name}`;
}

/** Whether the selector is one requirement pinning `key` (see Entry.reachesBucketNodes). */
function onlyPins(selector: LabelSelector, key: string): boolean {
  const labels = Object.keys(selector.matchLabels ?? {});
  const expressions = selector.matchExpressions ?? [];
  if (labels.length === 1 && expressions.length === 0) return labels[0] === key;
  if (labels.length > 0 || expressions.length !== 1) return false;
  const req = expressions[0];
  return req.key === key && req.operator === 'In' && (req.values?.length ?? 0) > 0;
}

/**
 * What a lookup asks of a capacity the node may reach: `reached` is true when the index already knows the node is
 * reached (see Entry.reachesBucketNodes), else the accept function must still match the selector.
 */
export type CapacityAccept<C> = (c: CSIStorageCapacity, context: C, reached: boolean) => boolean;

function firstAccepted<C>(
  entries: readonly Entry[] | undefined,
  accept: CapacityAccept<C>,
  context: C,
  pinned: boolean,
): Entry | undefined {
  if (!entries) return undefined;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (accept(e.capacity, context, pinned && e.reachesBucketNodes)) return e;
  }
  return undefined;
}

/** The capacities of the class that reach a node with these labels, in scan order, and the buckets read. */
function rowContent(
  cls: ClassIndex,
  labels: Readonly<Record<string, string>>,
  sources: RowSources,
): { capacities: CSIStorageCapacity[]; buckets: Entry[][] } {
  const { buckets } = nodeBuckets(cls, labels);
  const reaching = new Set<Entry>();
  for (const e of cls.unpinned) if (sources.reaches(e.capacity, labels)) reaching.add(e);
  for (const bucket of buckets) {
    for (const e of bucket) if (e.reachesBucketNodes || sources.reaches(e.capacity, labels)) reaching.add(e);
  }
  const capacities = [...reaching].sort((a, b) => a.seq - b.seq).map((e) => e.capacity);
  return { capacities, buckets };
}

/**
 * A claim's capacity question on one node, for its dense row (CapacityIndex.findForNode). The provisioning check
 * passes its per-node check object itself, refilled per claim: asking allocates nothing.
 */
export interface CapacityRowQuery {
  /** The node's labels; without them there is no row to read. */
  readonly nodeLabels: Readonly<Record<string, string>> | undefined;
  /** The node's NodeInfo.ordinal (>= 0). */
  readonly ordinal: number;
  /** The claim's request, in bytes. */
  readonly size: number;
  /** Set (truthy) in joint accounting: what is in flight and the pod's earlier claims count. */
  readonly joint: unknown;
  /** Joint: what the pod's earlier claims took per capacity object. */
  readonly pod: ReadonlyMap<CSIStorageCapacity, number>;
}

export class CapacityIndex {
  readonly #classes = new Map<string, ClassIndex>();
  readonly #entries = new Map<string, Entry>();
  #seq = 0;
  readonly #rowSources: RowSources | undefined;

  /** With `rows`, findForNode answers from dense per-node rows. */
  constructor(rows?: RowSources) {
    this.#rowSources = rows;
  }

  /** Add or replace (by namespace/name); a replaced capacity moves to the end of the scan order. */
  upsert(capacity: CSIStorageCapacity): void {
    this.delete(capacity);
    const cls = this.#class(capacity.storageClassName);
    const entry: Entry = { seq: this.#seq++, capacity, reachesBucketNodes: false, places: [] };
    const selector = capacity.nodeTopology;
    // A nil nodeTopology reaches no node: such a capacity is only counted, never found.
    if (selector) {
      let values: string[] | undefined;
      let key: string | undefined;
      for (const k of PINNABLE_KEYS) {
        values = pinnedValues(selector, k);
        if (values) {
          key = k;
          break;
        }
      }
      if (key === undefined || values === undefined) {
        entry.places.push({ bucket: cls.unpinned });
      } else {
        entry.reachesBucketNodes = onlyPins(selector, key);
        let byValue = cls.pinned.get(key);
        if (!byValue) {
          byValue = new Map();
          cls.pinned.set(key, byValue);
        }
        for (const value of values) {
          let bucket = byValue.get(value);
          if (!bucket) {
            bucket = [];
            byValue.set(value, bucket);
            cls.version++;
            cls.rows?.staleAll();
          }
          entry.places.push({ bucket });
        }
      }
      // The newest seq: appending keeps every bucket sorted.
      for (const place of entry.places) place.bucket.push(entry);
      this.#stale(cls, entry);
    }
    cls.size++;
    this.#entries.set(objectKeyOf(capacity), entry);
  }

  /** Remove by namespace/name; unknown capacities are ignored. */
  delete(capacity: CSIStorageCapacity): void {
    const key = objectKeyOf(capacity);
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    // An emptied bucket stays (see ClassIndex.byNode): a capacity object republished every minute must not make
    // every node look its buckets up again.
    for (const { bucket } of entry.places) bucket.splice(bucket.indexOf(entry), 1);
    const className = entry.capacity.storageClassName;
    const cls = this.#classes.get(className)!;
    this.#stale(cls, entry);
    if (--cls.size === 0) this.#classes.delete(className);
  }

  /**
   * The first capacity of `className`, in scan order, that `accept` takes among those whose selector can match
   * `nodeLabels` (accept must still match the selector: the index only rules out capacities that cannot). `accept`
   * is called with `context`, so a hot caller can pass one function and its arguments instead of a closure per call.
   */
  find<C>(
    className: string,
    nodeLabels: Readonly<Record<string, string>> | undefined,
    accept: CapacityAccept<C>,
    context: C,
  ): CSIStorageCapacity | undefined {
    const cls = this.#classes.get(className);
    if (!cls) return undefined;
    let best = cls.unpinned.length > 0 ? firstAccepted(cls.unpinned, accept, context, false) : undefined;
    if (!nodeLabels) return best?.capacity;
    const { buckets } = nodeBuckets(cls, nodeLabels);
    for (let i = 0; i < buckets.length; i++) {
      const found = firstAccepted(buckets[i], accept, context, true);
      if (found && (!best || found.seq < best.seq)) best = found;
    }
    return best?.capacity;
  }

  /**
   * The first capacity of `className` in scan order that reaches the node and has room for `size` bytes (see
   * capacityFits: in flight owed, and in joint accounting what `pod`'s earlier claims took), read from the node's
   * dense row; CAPACITY_ROW_UNDECIDED when there is no row to read (no RowSources, or too many capacities reach it).
   */
  findForNode(
    className: string,
    query: CapacityRowQuery,
  ): CSIStorageCapacity | undefined | typeof CAPACITY_ROW_UNDECIDED {
    const cls = this.#classes.get(className);
    if (!cls) return undefined;
    if (!cls.rows || !query.nodeLabels) return CAPACITY_ROW_UNDECIDED;
    return cls.rows.find(query.ordinal, query.nodeLabels, query.size, !!query.joint, query.pod);
  }

  /** What the capacity object is owed changed (provisions in flight): the rows reading it are rebuilt. */
  owedChanged(capacityKey: string): void {
    const entry = this.#entries.get(capacityKey);
    const cls = entry && this.#classes.get(entry.capacity.storageClassName);
    if (entry && cls) this.#stale(cls, entry);
  }

  /** The rows that read one of the entry's buckets are stale (all rows for an unpinned entry). */
  #stale(cls: ClassIndex, entry: Entry): void {
    if (!cls.rows) return;
    for (const { bucket } of entry.places) {
      if (bucket === cls.unpinned) cls.rows.staleAll();
      else for (const o of cls.readers.get(bucket) ?? []) cls.rows.stale(o);
    }
  }

  #class(className: string): ClassIndex {
    let cls = this.#classes.get(className);
    if (!cls) {
      const made: ClassIndex = {
        pinned: new Map(),
        version: 0,
        byNode: new WeakMap(),
        unpinned: [],
        size: 0,
        rows: undefined,
        readers: new WeakMap(),
      };
      const sources = this.#rowSources;
      if (sources) {
        made.rows = new CapacityRows({
          content: (labels) => rowContent(made, labels, sources),
          bytes: sources.bytes,
          owed: sources.owed,
          readers: (bucket) => {
            let set = made.readers.get(bucket as Entry[]);
            if (!set) {
              set = new Set();
              made.readers.set(bucket as Entry[], set);
            }
            return set;
          },
        });
      }
      cls = made;
      this.#classes.set(className, cls);
    }
    return cls;
  }
}
