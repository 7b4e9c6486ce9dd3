// The free PVs of one storage class that can be on a node, as one dense row per node (indexed by the node's ordinal,
// see NodeInfo.ordinal): capacities, shape ids and PV objects in flat arrays at ordinal × width, already in the order
// FindMatchingVolume's walk over the node's topology buckets would meet them. A claim without selector is then
// matched on a node by reading one row (one or two cache lines) instead of following labels → buckets → records.
// Rows are built on first use from the buckets (the walk stays the reference) and made stale by the buckets they
// were built from when those change; a row also records the labels object it was built for.
import type { PersistentVolume } from '../cluster/types.ts';
import { type ClaimMatchInput, type FreePV, type FreePVBucket, type PVNames, shapeAccepted } from './pv-matching.ts';

type Labels = Readonly<Record<string, string>>;

/** The row could not answer (too many PVs on the node, an unknown access mode): walk the buckets instead. */
export const ROW_UNDECIDED: unique symbol = Symbol('row-undecided');

/** The most PVs a row holds; a node with more free PVs of the class is matched by the walk. */
const MAX_WIDTH = 64;

/** What a row is built from: the node's free PVs in walk order (affinity already checked) and the buckets read. */
export interface RowContent {
  slots: readonly FreePV[];
  buckets: readonly FreePVBucket[];
}

export class FreePVRows {
  #width = 8;
  /** Bumped to make every row stale (a bucket made, the unindexed PVs changed, the rows widened). */
  #epoch = 1;
  /** Per ordinal: the epoch its row was built at; -1 once a bucket it read changed. */
  #stamp = new Int32Array(0);
  /** Per ordinal: the PVs in its row; -1 when the row cannot answer (ROW_UNDECIDED). */
  #count = new Int32Array(0);
  #capacities = new Float64Array(0);
  #shapes = new Int32Array(0);
  #pvs: (PersistentVolume | undefined)[] = [];
  #labels: (Labels | undefined)[] = [];
  #read: (readonly FreePVBucket[] | undefined)[] = [];
  readonly #build: (labels: Labels) => RowContent;

  constructor(build: (labels: Labels) => RowContent) {
    this.#build = build;
  }

  /** A bucket the row of `ordinal` was built from changed. */
  stale(ordinal: number): void {
    if (ordinal < this.#stamp.length) this.#stamp[ordinal] = -1;
  }

  /** Every row is rebuilt on its next use. */
  staleAll(): void {
    this.#epoch++;
  }

  /**
   * The PV FindMatchingVolume's walk would choose for a claim without selector on the node of `ordinal` with these
   * labels, among the free PVs only (the caller has ruled out PVs pre-bound to the claim); ROW_UNDECIDED when the
   * row cannot say.
   */
  find(
    ordinal: number,
    labels: Labels,
    input: ClaimMatchInput,
    excluded: PVNames,
  ): PersistentVolume | undefined | typeof ROW_UNDECIDED {
    if (input.accessModes < 0) return ROW_UNDECIDED;
    if (ordinal >= this.#stamp.length) this.#grow(ordinal);
    if (this.#stamp[ordinal] !== this.#epoch || this.#labels[ordinal] !== labels) this.#fill(ordinal, labels);
    const n = this.#count[ordinal];
    if (n < 0) return ROW_UNDECIDED;
    const capacities = this.#capacities;
    const shapes = this.#shapes;
    const request = input.request;
    const start = ordinal * this.#width;
    for (let i = start, end = start + n; i < end; i++) {
      if (capacities[i] < request || !shapeAccepted(input, shapes[i])) continue;
      const pv = this.#pvs[i]!;
      if (excluded.size > 0 && (excluded.hasPV ? excluded.hasPV(pv) : excluded.has(pv.metadata.name))) continue;
      return pv;
    }
    return undefined;
  }

  #fill(ordinal: number, labels: Labels): void {
    const { slots, buckets } = this.#build(labels);
    for (const b of this.#read[ordinal] ?? []) b.readers.delete(ordinal);
    for (const b of buckets) b.readers.add(ordinal);
    this.#read[ordinal] = buckets;
    this.#labels[ordinal] = labels;
    let usable = slots.length <= MAX_WIDTH;
    for (let i = 0; usable && i < slots.length; i++) usable = slots[i].shape >= 0;
    if (usable && slots.length > this.#width) this.#widen(slots.length);
    this.#stamp[ordinal] = this.#epoch;
    if (!usable) {
      this.#count[ordinal] = -1;
      return;
    }
    const start = ordinal * this.#width;
    for (let i = 0; i < slots.length; i++) {
      this.#capacities[start + i] = slots[i].capacity;
      this.#shapes[start + i] = slots[i].shape;
      this.#pvs[start + i] = slots[i].pv;
    }
    // PVs of rows built earlier past the end are never read; those are cleared for the collector.
    for (let i = start + slots.length; i < start + this.#width; i++) this.#pvs[i] = undefined;
    this.#count[ordinal] = slots.length;
  }

  #grow(ordinal: number): void {
    const rows = Math.max(64, ordinal + 1, this.#stamp.length * 2);
    const stamp = new Int32Array(rows).fill(-1);
    stamp.set(this.#stamp);
    this.#stamp = stamp;
    const count = new Int32Array(rows);
    count.set(this.#count);
    this.#count = count;
    this.#resize(rows, this.#width);
  }

  /** Room for `n` PVs per row: every row is rebuilt at the new width. */
  #widen(n: number): void {
    let width = this.#width;
    while (width < n) width *= 2;
    this.#resize(this.#stamp.length, width);
    this.#epoch++;
  }

  #resize(rows: number, width: number): void {
    const capacities = new Float64Array(rows * width);
    const shapes = new Int32Array(rows * width);
    if (width === this.#width) {
      capacities.set(this.#capacities);
      shapes.set(this.#shapes);
    } else {
      this.#pvs = [];
    }
    this.#capacities = capacities;
    this.#shapes = shapes;
    this.#width = width;
    this.#pvs.length = rows * width;
  }
}
