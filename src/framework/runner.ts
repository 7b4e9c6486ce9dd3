// Runs the enabled plugins' extension points in profile order, as kube-scheduler's framework runtime does:
// a node fails at the first filter plugin that rejects it, scores are averaged, reserve is undone in reverse.
import { copyNodeInfo, type NodeInfo } from '../cache/node-info.ts';
import type { Pod } from '../cluster/types.ts';
import { CycleState } from './cycle-state.ts';
import {
  type AnyPlugin,
  type ExplainLimits,
  type FilterPlugin,
  isSuccess,
  type NodeScore,
  type PreBindPlugin,
  type PreFilterExtensions,
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

/** What filter needs from the nominated-pod tracker (src/cache/nominator.ts). */
export interface NominatedPods {
  nominatedPodsForNode(nodeName: string): readonly { readonly pod: Pod; readonly priority: number }[];
}

export interface FrameworkOptions {
  /** Pods waiting for a node after preempting; without it filter ignores nominations. */
  nominator?: NominatedPods;
  /** The pod's priority (src/cache/priority.ts); default spec.priority or 0. */
  priorityOf?: (pod: Pod) => number;
  /**
   * A profile's score weights by plugin name (kube-scheduler's default profile: src/plugins/default-profile.ts);
   * only plugins named here take part in scoreWithWeights.
   */
  weights?: Readonly<Record<string, number>>;
}

/** A node's weighted total (upstream's sum of normalized score × weight) and each plugin's part of it. */
export interface WeightedNodeScore {
  name: string;
  total: number;
  plugins: Record<string, number>;
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
  readonly #extensions: PreFilterExtensions[];
  readonly #nominator: NominatedPods | undefined;
  readonly priorityOf: (pod: Pod) => number;
  readonly weights: Readonly<Record<string, number>>;

  constructor(plugins: readonly AnyPlugin[], options: FrameworkOptions = {}) {
    this.plugins = plugins;
    this.weights = options.weights ?? {};
    this.#nominator = options.nominator;
    this.priorityOf = options.priorityOf ?? ((pod) => pod.spec.priority ?? 0);
    this.#extensions = plugins.filter((p) => has(p, 'addPod') && has(p, 'removePod')) as PreFilterExtensions[];
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

  /**
   * After runPreFilter: the only nodes worth filtering when some preFilter could tell (upstream PreFilterResult,
   * the plugins' sets intersected) and the plugins that narrowed them; undefined: every node.
   */
  preFilterResult(state: CycleState): { nodeNames: ReadonlySet<string>; plugins: string[] } | undefined {
    let out: { nodeNames: ReadonlySet<string>; plugins: string[] } | undefined;
    const skipped = state.read<Set<string>>(SKIPPED);
    for (const plugin of this.plugins) {
      if (typeof plugin.preFilterResult !== 'function' || skipped?.has(plugin.name)) continue;
      const names = plugin.preFilterResult(state);
      if (!names) continue;
      out = out
        ? { nodeNames: new Set([...out.nodeNames].filter((n) => names.has(n))), plugins: [...out.plugins, plugin.name] }
        : { nodeNames: names, plugins: [plugin.name] };
    }
    return out;
  }

  /**
   * Every filter plugin's verdict on the node, not only the first rejection (explain: what else would stand in the
   * way), with nominated pods present as runFilterWithNominatedPods's first pass sees them.
   */
  runAllFilters(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status[] {
    const skipped = state.read<Set<string>>(SKIPPED);
    const added = this.#addNominatedPods(state, pod, nodeInfo);
    const [s, info] = added && !('code' in added) ? [added.state, added.nodeInfo] : [state, nodeInfo];
    const out: Status[] = [];
    for (const plugin of this.#filter) {
      if (skipped?.has(plugin.name)) continue;
      const st = plugin.filter(s, pod, info);
      if (!isSuccess(st)) out.push({ ...st, plugin: plugin.name });
    }
    return out;
  }

  /**
   * Upstream RunPreScorePlugins, RunScorePlugins with NormalizeScore and the profile's weights, over the feasible
   * nodes (after runPreFilter on `state`). Plugins without a weight, or whose preScore answers Skip, do not score.
   */
  scoreWithWeights(state: CycleState, pod: Pod, nodes: readonly NodeInfo[]): WeightedNodeScore[] {
    const out: WeightedNodeScore[] = nodes.map((n) => ({ name: n.name, total: 0, plugins: {} }));
    for (const scorer of this.#score) {
      const plugin = scorer as AnyPlugin;
      const weight = this.weights[plugin.name];
      if (!weight) continue;
      if (typeof plugin.preScore === 'function') {
        const s = plugin.preScore(state, pod, nodes);
        if (s.code === 'Skip') continue;
        if (!isSuccess(s)) throw new FrameworkError(plugin.name, s.reasons);
      }
      const scores: NodeScore[] = nodes.map((n) => ({ name: n.name, score: scorer.score(state, pod, n) }));
      if (typeof plugin.normalizeScore === 'function') plugin.normalizeScore(state, pod, scores);
      scores.forEach((s, i) => {
        out[i].plugins[plugin.name] = s.score * weight;
        out[i].total += s.score * weight;
      });
    }
    return out;
  }

  /** After runPreFilter: whether every filter plugin has nothing to check for this pod. */
  allFiltersSkipped(state: CycleState): boolean {
    const skipped = state.read<Set<string>>(SKIPPED);
    return this.#filter.every((p) => skipped?.has(p.name));
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

  /** Upstream RunPreFilterExtensionAddPod: plugins that skipped this pod are not told. */
  runPreFilterAddPod(state: CycleState, pod: Pod, podToAdd: Pod, nodeInfo: NodeInfo): Status {
    return this.#runExtension(state, (p) => p.addPod(state, pod, podToAdd, nodeInfo));
  }

  /** Upstream RunPreFilterExtensionRemovePod. */
  runPreFilterRemovePod(state: CycleState, pod: Pod, podToRemove: Pod, nodeInfo: NodeInfo): Status {
    return this.#runExtension(state, (p) => p.removePod(state, pod, podToRemove, nodeInfo));
  }

  #runExtension(state: CycleState, call: (plugin: PreFilterExtensions) => Status): Status {
    const skipped = state.read<Set<string>>(SKIPPED);
    for (const plugin of this.#extensions) {
      if (skipped?.has(plugin.name)) continue;
      const s = call(plugin);
      if (!isSuccess(s)) return { code: 'Error', reasons: s.reasons, plugin: plugin.name };
    }
    return SUCCESS;
  }

  /**
   * Upstream RunFilterPluginsWithNominatedPods: pods nominated to the node with at least the pod's priority count
   * as present. Two passes, with and then without them, where nominated pods were added: a node fits only if both
   * pass (the nominated pods may never arrive, and must not be needed either). Lower-priority nominations are
   * ignored: the pod may take what they wait for.
   */
  runFilterWithNominatedPods(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    const added = this.#addNominatedPods(state, pod, nodeInfo);
    if (!added) return this.runFilter(state, pod, nodeInfo);
    if ('code' in added) return added;
    const s = this.runFilter(added.state, pod, added.nodeInfo);
    if (!isSuccess(s)) return s;
    return this.runFilter(state, pod, nodeInfo);
  }

  /** Upstream addGENominatedPods: undefined when no pod was added, an Error status when an extension failed. */
  #addNominatedPods(
    state: CycleState,
    pod: Pod,
    nodeInfo: NodeInfo,
  ): { state: CycleState; nodeInfo: NodeInfo } | Status | undefined {
    if (!this.#nominator || !nodeInfo.node) return undefined;
    const nominated = this.#nominator.nominatedPodsForNode(nodeInfo.name);
    if (nominated.length === 0) return undefined;
    const priority = this.priorityOf(pod);
    let out: { state: CycleState; nodeInfo: ReturnType<typeof copyNodeInfo> } | undefined;
    for (const n of nominated) {
      if (n.priority < priority || n.pod.metadata.uid === pod.metadata.uid) continue;
      out ??= { state: state.clone(), nodeInfo: copyNodeInfo(nodeInfo) };
      out.nodeInfo.addPod(n.pod);
      const s = this.runPreFilterAddPod(out.state, pod, n.pod, out.nodeInfo);
      if (!isSuccess(s)) return s;
    }
    return out;
  }

  /**
   * What every explaining plugin not skipped by this cycle's preFilter says about a node, by plugin name, with the
   * pods nominated to it present as runFilterWithNominatedPods sees them (explain; never on the verbs' path).
   */
  explainNode(state: CycleState, pod: Pod, nodeInfo: NodeInfo, limits: ExplainLimits): Record<string, object> {
    const skipped = state.read<Set<string>>(SKIPPED);
    const added = this.#addNominatedPods(state, pod, nodeInfo);
    const [s, info] = added && !('code' in added) ? [added.state, added.nodeInfo] : [state, nodeInfo];
    const out: Record<string, object> = {};
    for (const plugin of this.plugins) {
      if (typeof plugin.explain !== 'function' || skipped?.has(plugin.name)) continue;
      const detail = plugin.explain(s, pod, info, limits);
      if (detail !== undefined) out[plugin.name] = detail;
    }
    return out;
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
    // Every filter and every preFilter extension skipped this pod: nominated pods cannot change a verdict, so each
    // known node passes without running the per-node machinery (a pod without volumes costs a lookup per name).
    const skipped = state.read<Set<string>>(SKIPPED);
    const allPass =
      isSuccess(pre) && this.allFiltersSkipped(state) && this.#extensions.every((p) => skipped?.has(p.name));
    for (const name of nodeNames) {
      const nodeInfo = lookup(name);
      if (!nodeInfo) {
        out.failed.set(name, unknownReason(name));
        continue;
      }
      if (allPass) {
        out.feasible.push(name);
        continue;
      }
      const s = isSuccess(pre) ? this.runFilterWithNominatedPods(state, pod, nodeInfo) : pre;
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
  ): { host: string; score: number }[];
  /** The same, each answer built by `answer` (prioritize builds the wire shape directly: no second array). */
  scoreNodes<T>(
    pod: Pod,
    nodeNames: readonly string[],
    lookup: (name: string) => NodeInfo | undefined,
    answer: (host: string, score: number) => T,
  ): T[];
  scoreNodes<T>(
    pod: Pod,
    nodeNames: readonly string[],
    lookup: (name: string) => NodeInfo | undefined,
    answer: (host: string, score: number) => T = (host, score) => ({ host, score }) as T,
  ): T[] {
    const state = new CycleState();
    const pre = this.runPreFilter(state, pod);
    if (pre.code === 'Error') throw new FrameworkError(pre.plugin ?? 'preFilter', pre.reasons);
    const skipped = state.read<Set<string>>(SKIPPED)!;
    const scorers = isSuccess(pre) ? this.#score.filter((p) => !skipped.has(p.name)) : [];
    // Without a scorer every node scores 0, known or not: nothing to look up (a pod without claims).
    if (scorers.length === 0) return nodeNames.map((host) => answer(host, 0));
    return nodeNames.map((host) => {
      const nodeInfo = lookup(host);
      if (!nodeInfo) return answer(host, 0);
      let sum = 0;
      for (const plugin of scorers) {
        const raw = plugin.score(state, pod, nodeInfo);
        sum += Number.isFinite(raw) ? Math.min(MAX_NODE_SCORE, Math.max(0, raw)) : 0;
      }
      const mean = sum / scorers.length;
      return answer(host, Math.round((mean * MAX_EXTENDER_PRIORITY) / MAX_NODE_SCORE));
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
        s = { code: 'Error', reasons: [(err as Error).message], cause: err };
      }
      if (!isSuccess(s)) return { ...s, plugin: plugin.name };
    }
    return SUCCESS;
  }
}
