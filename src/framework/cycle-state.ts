// Per-request scratch space that plugins share between their extension points (upstream CycleState).
export class CycleState {
  readonly #data = new Map<string, unknown>();
  /**
   * An analysis cycle (explain, the pending report): its filter runs answer an operator, not kube-scheduler, so plugins
   * remember nothing for a prioritize or bind to read (thousands of pending pods would crowd the verbs' decisions out).
   */
  readonly analysis: boolean;

  constructor(options: { analysis?: boolean } = {}) {
    this.analysis = options.analysis ?? false;
  }

  read<T>(key: string): T | undefined {
    return this.#data.get(key) as T | undefined;
  }

  write(key: string, value: unknown): void {
    this.#data.set(key, value);
  }

  /** A copy sharing the values (upstream Clone); writers to the copy replace values, so the original keeps its own. */
  clone(): CycleState {
    const c = new CycleState({ analysis: this.analysis });
    for (const [k, v] of this.#data) c.#data.set(k, v);
    return c;
  }
}
