// The CSIStorageCapacity objects of one storage class that reach a node, as one dense row per node ordinal (see
// NodeInfo.ordinal): in scan order, with the bytes the capacity check reads (published capacity, maximumVolumeSize,
// what provisions in flight owe) in flat arrays. A claim's capacity check on a node then reads one row instead of
// labels → buckets → capacity objects → their parsed quantities → the in-flight map. Rows are built and made stale as
// RowTable says; the index also makes a row stale when what a capacity object is owed changes.
import type { CSIStorageCapacity } from '../cluster/types.ts';
import { type RowItems, RowTable } from './row-table.ts';

type Labels = Readonly<Record<string, string>>;

/** The row could not answer (more capacity objects reach the node than a row holds): use the index's walk. */
export const CAPACITY_ROW_UNDECIDED: unique symbol = Symbol('capacity-row-undecided');

const MAX_WIDTH = 16;

/** A capacity object's quantities in bytes (null when unset), as the check reads them. */
export interface CapacityBytes {
  /** `capacity`. */
  published: number | null;
  /** `maximumVolumeSize` when set (more precise), else `capacity`. */
  limit: number | null;
  hasMaximumVolumeSize: boolean;
}

/**
 * Whether `size` more bytes fit (NaN for a quantity not set). Upstream's capacitySufficient: the limit
 * (maximumVolumeSize when set, else capacity) holds `size` plus `owed` (what nominated pods take). Joint: the claim
 * alone within maximumVolumeSize (when set), and the claim plus `owed` (in flight, nominated, the pod's earlier claims)
 * within the capacity (when set); with neither set nothing is known to be free.
 */
export function capacityFits(
  published: number,
  limit: number,
  hasMaximumVolumeSize: boolean,
  size: number,
  owed: number,
  joint: boolean,
): boolean {
  if (!joint) return limit >= size + owed; // false for NaN
  if (hasMaximumVolumeSize && !(limit >= size)) return false;
  if (Number.isNaN(published)) return hasMaximumVolumeSize;
  return size + owed <= published;
}

/** What a row is built from. */
export interface CapacityRowContent {
  /** The capacity objects of the class that reach the node, in scan order. */
  capacities: readonly CSIStorageCapacity[];
  /** The buckets they were found in (a change to one makes the row stale). */
  buckets: readonly object[];
}

export interface CapacityRowSources {
  content(labels: Labels): CapacityRowContent;
  bytes(capacity: CSIStorageCapacity): CapacityBytes;
  /** Bytes provisions in flight owe the capacity object. */
  owed(capacity: CSIStorageCapacity): number;
  /** The readers of a bucket (row ordinals to make stale when it changes). */
  readers(bucket: object): Set<number>;
}

export class CapacityRows extends RowTable<CSIStorageCapacity, object> {
  /** Per slot: published, limit (NaN for null), owed in flight, and 1 when maximumVolumeSize is set. */
  #published = new Float64Array(0);
  #limit = new Float64Array(0);
  #owed = new Float64Array(0);
  #hasMax = new Uint8Array(0);
  #capacities: (CSIStorageCapacity | undefined)[] = [];
  readonly #sources: CapacityRowSources;

  constructor(sources: CapacityRowSources) {
    super(2, MAX_WIDTH);
    this.#sources = sources;
  }

  /**
   * The first capacity object in scan order that reaches the node and has room for `size` bytes (see capacityFits;
   * `pod`, in joint accounting, what the pod's earlier claims took per object). The owed bytes are in flight only:
   * nominated pods' are the caller's to rule out.
   */
  find(
    ordinal: number,
    labels: Labels,
    size: number,
    joint: boolean,
    pod: ReadonlyMap<CSIStorageCapacity, number>,
  ): CSIStorageCapacity | undefined | typeof CAPACITY_ROW_UNDECIDED {
    const start = this.row(ordinal, labels);
    if (start < 0) return CAPACITY_ROW_UNDECIDED;
    for (let i = start, end = start + this.count[ordinal]; i < end; i++) {
      // Upstream's check counts neither provisions in flight nor the pod's earlier claims.
      const owed = joint ? this.#owed[i] + (pod.size > 0 ? (pod.get(this.#capacities[i]!) ?? 0) : 0) : 0;
      const fits = capacityFits(this.#published[i], this.#limit[i], this.#hasMax[i] === 1, size, owed, joint);
      if (fits) return this.#capacities[i];
    }
    return undefined;
  }

  protected content(labels: Labels): RowItems<CSIStorageCapacity, object> {
    const { capacities, buckets } = this.#sources.content(labels);
    return { items: capacities, buckets };
  }

  protected readers(bucket: object): Set<number> {
    return this.#sources.readers(bucket);
  }

  protected write(start: number, capacities: readonly CSIStorageCapacity[]): void {
    for (let i = 0; i < capacities.length; i++) {
      const c = capacities[i];
      const bytes = this.#sources.bytes(c);
      this.#published[start + i] = bytes.published ?? Number.NaN;
      this.#limit[start + i] = bytes.limit ?? Number.NaN;
      this.#hasMax[start + i] = bytes.hasMaximumVolumeSize ? 1 : 0;
      this.#owed[start + i] = this.#sources.owed(c);
      this.#capacities[start + i] = c;
    }
    for (let i = start + capacities.length; i < start + this.width; i++) this.#capacities[i] = undefined;
  }

  protected resize(rows: number, width: number, keep: boolean): void {
    const grow = <T extends Float64Array | Uint8Array>(old: T, make: (n: number) => T): T => {
      const next = make(rows * width);
      if (keep) next.set(old);
      return next;
    };
    this.#published = grow(this.#published, (n) => new Float64Array(n));
    this.#limit = grow(this.#limit, (n) => new Float64Array(n));
    this.#owed = grow(this.#owed, (n) => new Float64Array(n));
    this.#hasMax = grow(this.#hasMax, (n) => new Uint8Array(n));
    if (!keep) this.#capacities = [];
    this.#capacities.length = rows * width;
  }
}
