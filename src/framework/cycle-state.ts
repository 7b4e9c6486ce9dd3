// Per-request scratch space that plugins share between their extension points (upstream CycleState).
export class CycleState {
  readonly #data = new Map<string, unknown>();

  read<T>(key: string): T | undefined {
    return this.#data.get(key) as T | undefined;
  }

  write(key: string, value: unknown): void {
    this.#data.set(key, value);
  }

  /** A copy sharing the values (upstream Clone); writers to the copy replace values, so the original keeps its own. */
  clone(): CycleState {
    const c = new CycleState();
    for (const [k, v] of this.#data) c.#data.set(k, v);
    return c;
  }
}
