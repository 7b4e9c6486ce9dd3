// One dense row per node ordinal (see NodeInfo.ordinal), for the volume checks that would otherwise follow
// labels → buckets → objects on every filter: a subclass keeps its per-slot facts in flat arrays at ordinal × width,
// and this class keeps what is common: which rows are current, how many slots each fills, the labels object a row was
// built for and the buckets it read (a change to one makes the row stale), and room for more rows or wider ones.
// Rows are built on first use; the walk they replace stays the reference.

type Labels = Readonly<Record<string, string>>;

/** What a row is built from: its items in the order the walk meets them, and the buckets they were found in. */
export interface RowItems<Item, Bucket> {
  items: readonly Item[];
  buckets: readonly Bucket[];
}

export abstract class RowTable<Item, Bucket> {
  /** Slots per row. */
  protected width: number;
  readonly #maxWidth: number;
  /** Bumped to make every row stale. */
  #epoch = 1;
  /** Per ordinal: the epoch its row was built at; -1 once a bucket it read changed. */
  #stamp = new Int32Array(0);
  /** Per ordinal: the slots its row fills; -1 when the row cannot answer. */
  protected count = new Int32Array(0);
  #labels: (Labels | undefined)[] = [];
  #read: (readonly Bucket[] | undefined)[] = [];

  constructor(width: number, maxWidth: number) {
    this.width = width;
    this.#maxWidth = maxWidth;
  }

  /** A bucket the row of `ordinal` was built from changed. */
  stale(ordinal: number): void {
    if (ordinal < this.#stamp.length) this.#stamp[ordinal] = -1;
  }

  /** Every row is rebuilt on its next use. */
  staleAll(): void {
    this.#epoch++;
  }

  /** The first slot of the current row of `ordinal` for these labels (built now if stale), or -1 when it cannot answer. */
  protected row(ordinal: number, labels: Labels): number {
    if (ordinal >= this.#stamp.length) this.#grow(ordinal);
    if (this.#stamp[ordinal] !== this.#epoch || this.#labels[ordinal] !== labels) this.#fill(ordinal, labels);
    return this.count[ordinal] < 0 ? -1 : ordinal * this.width;
  }

  protected abstract content(labels: Labels): RowItems<Item, Bucket>;
  /** The row ordinals a bucket was read by. */
  protected abstract readers(bucket: Bucket): Set<number>;
  /** Writes the items into the slots from `start` on, and clears object references up to `start + width`. */
  protected abstract write(start: number, items: readonly Item[]): void;
  /** Makes the flat arrays `rows × width` slots; `keep` (same width) keeps their content. */
  protected abstract resize(rows: number, width: number, keep: boolean): void;

  /** Whether a row can hold these items (beyond fitting the width). */
  protected usable(_items: readonly Item[]): boolean {
    return true;
  }

  #fill(ordinal: number, labels: Labels): void {
    const { items, buckets } = this.content(labels);
    for (const b of this.#read[ordinal] ?? []) this.readers(b).delete(ordinal);
    for (const b of buckets) this.readers(b).add(ordinal);
    this.#read[ordinal] = buckets;
    this.#labels[ordinal] = labels;
    const usable = items.length <= this.#maxWidth && this.usable(items);
    if (usable && items.length > this.width) this.#widen(items.length);
    this.#stamp[ordinal] = this.#epoch;
    if (!usable) {
      this.count[ordinal] = -1;
      return;
    }
    this.write(ordinal * this.width, items);
    this.count[ordinal] = items.length;
  }

  #grow(ordinal: number): void {
    const rows = Math.max(64, ordinal + 1, this.#stamp.length * 2);
    const stamp = new Int32Array(rows).fill(-1);
    stamp.set(this.#stamp);
    this.#stamp = stamp;
    const count = new Int32Array(rows);
    count.set(this.count);
    this.count = count;
    this.resize(rows, this.width, true);
  }

  /** Room for `n` slots per row: every row is rebuilt at the new width. */
  #widen(n: number): void {
    let width = this.width;
    while (width < n) width *= 2;
    this.resize(this.#stamp.length, width, false);
    this.width = width;
    this.#epoch++;
  }
}
