// Runs the enabled plugins' extension points in profile order, as kube-scheduler's framework runtime does:
// a node fails at the first filter plugin that rejects it, scores are summed, reserve is undone in reverse.
import type { NodeInfo } from '../cache/node-info.ts';
import type { Pod } from '../cluster/types.ts';
import { CycleState } from './cycle-state.ts';
import {
  type AnyPlugin,
  type FilterPlugin,
  isSuccess,
  type PreBindPlugin,
  type PreFilterPlugin,
  type ReservePlugin,
  type ScorePlugin,
  type Status,
  SUCCESS,
} from './interfaces.ts';

/** kube-scheduler's MaxNodeScore; plugins score in 0..MAX_NODE_SCORE. */
export const MAX_NODE_SCORE = 100;
/** The extender protocol's MaxExtenderPriority; prioritize answers in 0..MAX_EXTENDER_PRIORITY. */
export const MAX_EXTENDER_PRIORITY = 10;

const SKIPPED = 'framework/skipped-plugins';

export interface FilterOutcome {
  feasible: string[];
  /** Unschedulable: preemption may help (extender FailedNodes). */
  failed: Map<string, string>;
  /** UnschedulableAndUnresolvable (extender FailedAndUnresolvableNodes). */
  unresolvable: Map<string, string>;
}

export class FrameworkError extends Error {
  readonly plugin: string;
  constructor(plugin: string, reasons: readonly string[]) {
    super(`${plugin}: ${reasons.join(', ') || 'internal error'}`);
    this.name = 'FrameworkError';
    this.plugin = plugin;
  }
}

function has<K extends keyof AnyPlugin>(plugin: AnyPlugin, method: K): boolean {
  return typeof plugin[method] === 'function';
}

export class Framework {
  readonly plugins: readonly AnyPlugin[];
  readonly #preFilter: PreFilterPlugin[];
  readonly #filter: FilterPlugin[];
  readonly #score: ScorePlugin[];
  readonly #reserve: ReservePlugin[];
  readonly #preBind: PreBindPlugin[];

  constructor(plugins: readonly AnyPlugin[]) {
    this.plugins = plugins;
    this.#preFilter = plugins.filter((p) => has(p, 'preFilter')) as PreFilterPlugin[];
    this.#filter = plugins.filter((p) => has(p, 'filter')) as FilterPlugin[];
    this.#score = plugins.filter((p) => has(p, 'score')) as ScorePlugin[];
    this.#reserve = plugins.filter((p) => has(p, 'reserve')) as ReservePlugin[];
    this.#preBind = plugins.filter((p) => has(p, 'preBind')) as PreBindPlugin[];
  }

  /**
   * Runs every preFilter. A plugin answering Skip has nothing to check for this pod: its filter and score are
   * not called in this cycle. The first rejection is returned (it applies to every node alike).
   */
  runPreFilter(state: CycleState, pod: Pod): Status {
    const skipped = new Set<string>();
    state.write(SKIPPED, skipped);
    for (const plugin of this.#preFilter) {
      const s = plugin.preFilter(state, pod);
      if (s.code === 'Skip') skipped.add(plugin.name);
      else if (!isSuccess(s)) return { ...s, plugin: plugin.name };
    }
    return SUCCESS;
  }

  runFilter(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    const skipped = state.read<Set<string>>(SKIPPED);
    for (const plugin of this.#filter) {
      if (skipped?.has(plugin.name)) continue;
      const s = plugin.filter(state, pod, nodeInfo);
      if (!isSuccess(s)) return { ...s, plugin: plugin.name };
    }
    return SUCCESS;
  }

  /**
   * Filters the given nodes. `lookup` yields the NodeInfo of a node or undefined when the node is unknown;
   * `unknownReason` is the reason such nodes fail with (Unschedulable). Throws FrameworkError on a plugin Error.
   */
  filterNodes(
    pod: Pod,
    nodeNames: readonly string[],
    lookup: (name: string) => NodeInfo | undefined,
    unknownReason: (name: string) => string,
  ): FilterOutcome {
    const out: FilterOutcome = { feasible: [], failed: new Map(), unresolvable: new Map() };
    const state = new CycleState();
    const pre = this.runPreFilter(state, pod);
    if (pre.code === 'Error') throw new FrameworkError(pre.plugin ?? 'preFilter', pre.reasons);
    for (const name of nodeNames) {
      const nodeInfo = lookup(name);
      if (!nodeInfo) {
        out.failed.set(name, unknownReason(name));
        continue;
      }
      const s = isSuccess(pre) ? this.runFilter(state, pod, nodeInfo) : pre;
      if (isSuccess(s)) out.feasible.push(name);
      else if (s.code === 'Unschedulable') out.failed.set(name, s.reasons.join(', '));
      else if (s.code === 'UnschedulableAndUnresolvable') out.unresolvable.set(name, s.reasons.join(', '));
      else throw new FrameworkError(s.plugin ?? 'filter', s.reasons);
    }
    return out;
  }

  /**
   * Scores nodes in the extender's integer range 0..10: the mean of the plugins' 0..100 scores, divided by 10 and
   * rounded. Unknown nodes and a cycle with no scorer score 0, which leaves the scheduler's own ranking untouched.
   */
  scoreNodes(
    pod: Pod,
    nodeNames: readonly string[],
    lookup: (name: string) => NodeInfo | undefined,
  ): { host: string; score: number }[] {
    const state = new CycleState();
    const pre = this.runPreFilter(state, pod);
    if (pre.code === 'Error') throw new FrameworkError(pre.plugin ?? 'preFilter', pre.reasons);
    const skipped = state.read<Set<string>>(SKIPPED)!;
    const scorers = isSuccess(pre) ? this.#score.filter((p) => !skipped.has(p.name)) : [];
    return nodeNames.map((host) => {
      const nodeInfo = lookup(host);
      if (!nodeInfo || scorers.length === 0) return { host, score: 0 };
      let sum = 0;
      for (const plugin of scorers) {
        const raw = plugin.score(state, pod, nodeInfo);
        sum += Number.isFinite(raw) ? Math.min(MAX_NODE_SCORE, Math.max(0, raw)) : 0;
      }
      const mean = sum / scorers.length;
      return { host, score: Math.round((mean * MAX_EXTENDER_PRIORITY) / MAX_NODE_SCORE) };
    });
  }

  /** Reserve in order; on a failure, unreserve every plugin (in reverse) and return the failure. */
  runReserve(state: CycleState, pod: Pod, nodeName: string): Status {
    for (const plugin of this.#reserve) {
      let s: Status;
      try {
        s = plugin.reserve(state, pod, nodeName);
      } catch (err) {
        s = { code: 'Error', reasons: [(err as Error).message] };
      }
      if (!isSuccess(s)) {
        this.runUnreserve(state, pod, nodeName);
        return { ...s, plugin: plugin.name };
      }
    }
    return SUCCESS;
  }

  /** Unreserves every plugin, in reverse, even past one that throws; the first error is rethrown afterwards. */
  runUnreserve(state: CycleState, pod: Pod, nodeName: string): void {
    let first: unknown;
    for (const plugin of [...this.#reserve].reverse()) {
      try {
        plugin.unreserve(state, pod, nodeName);
      } catch (err) {
        first ??= err;
      }
    }
    if (first !== undefined) throw first;
  }

  async runPreBind(state: CycleState, pod: Pod, nodeName: string, signal: AbortSignal): Promise<Status> {
    for (const plugin of this.#preBind) {
      let s: Status;
      try {
        s = await plugin.preBind(state, pod, nodeName, signal);
      } catch (err) {
        s = { code: 'Error', reasons: [(err as Error).message] };
      }
      if (!isSuccess(s)) return { ...s, plugin: plugin.name };
    }
    return SUCCESS;
  }
}
