// The free PVs of one storage class that can be on a node, as one dense row per node (indexed by the node's ordinal,
// see NodeInfo.ordinal): capacities, shape ids and PV objects in flat arrays at ordinal × width, already in the order
// FindMatchingVolume's walk over the node's topology buckets would meet them. A claim without selector is then
// matched on a node by reading one row (one or two cache lines) instead of following labels → buckets → records.
// Rows are built and made stale as RowTable says.
import type { PersistentVolume } from '../cluster/types.ts';
import { type ClaimMatchInput, type FreePV, type FreePVBucket, type PVNames, shapeAccepted } from './pv-matching.ts';
import { type RowItems, RowTable } from './row-table.ts';

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

export class FreePVRows extends RowTable<FreePV, FreePVBucket> {
  #capacities = new Float64Array(0);
  #shapes = new Int32Array(0);
  #pvs: (PersistentVolume | undefined)[] = [];
  readonly #build: (labels: Labels) => RowContent;

  constructor(build: (labels: Labels) => RowContent) {
    super(8, MAX_WIDTH);
    this.#build = build;
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
    const start = this.row(ordinal, labels);
    if (start < 0) return ROW_UNDECIDED;
    const capacities = this.#capacities;
    const shapes = this.#shapes;
    const request = input.request;
    for (let i = start, end = start + this.count[ordinal]; i < end; i++) {
      if (capacities[i] < request || !shapeAccepted(input, shapes[i])) continue;
      const pv = this.#pvs[i]!;
      if (excluded.size > 0 && (excluded.hasPV ? excluded.hasPV(pv) : excluded.has(pv.metadata.name))) continue;
      return pv;
    }
    return undefined;
  }

  protected content(labels: Labels): RowItems<FreePV, FreePVBucket> {
    const { slots, buckets } = this.#build(labels);
    return { items: slots, buckets };
  }

  protected readers(bucket: FreePVBucket): Set<number> {
    return bucket.readers;
  }

  /** A PV of an access-mode shape the row cannot encode is matched by the walk. */
  protected override usable(slots: readonly FreePV[]): boolean {
    return slots.every((slot) => slot.shape >= 0);
  }

  protected write(start: number, slots: readonly FreePV[]): void {
    for (let i = 0; i < slots.length; i++) {
      this.#capacities[start + i] = slots[i].capacity;
      this.#shapes[start + i] = slots[i].shape;
      this.#pvs[start + i] = slots[i].pv;
    }
    // PVs of rows built earlier past the end are never read; those are cleared for the collector.
    for (let i = start + slots.length; i < start + this.width; i++) this.#pvs[i] = undefined;
  }

  protected resize(rows: number, width: number, keep: boolean): void {
    const capacities = new Float64Array(rows * width);
    const shapes = new Int32Array(rows * width);
    if (keep) {
      capacities.set(this.#capacities);
      shapes.set(this.#shapes);
    } else {
      this.#pvs = [];
    }
    this.#capacities = capacities;
    this.#shapes = shapes;
    this.#pvs.length = rows * width;
  }
}
