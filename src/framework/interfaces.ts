// Plugin interfaces after kube-scheduler's framework (pkg/scheduler/framework/interface.go), reduced to the
// extension points an extender can serve: preFilter, filter and score answer filter/prioritize; reserve and
// preBind run inside bind, before the pod's Binding is created.

import type { NodeInfo } from '../cache/node-info.ts';
import type { Pod } from '../cluster/types.ts';
import type { CycleState } from './cycle-state.ts';

/**
 * Success: fits. Unschedulable: preemption may fix it (→ FailedNodes). UnschedulableAndUnresolvable: no eviction
 * can fix it (→ FailedAndUnresolvableNodes). Error: an internal failure, never a verdict. Skip: the plugin has
 * nothing to check for this pod (returned by preFilter; its filter/score are then not called).
 */
export type Code = 'Success' | 'Unschedulable' | 'UnschedulableAndUnresolvable' | 'Error' | 'Skip';

export interface Status {
  readonly code: Code;
  readonly reasons: readonly string[];
  /** The plugin that produced a non-success status; filled in by the runner. */
  plugin?: string;
  /** The error behind an Error status, when one was thrown (upstream's Status.err): lets a caller tell kinds apart. */
  readonly cause?: unknown;
}

export const SUCCESS: Status = Object.freeze({ code: 'Success', reasons: [] });
export const SKIP: Status = Object.freeze({ code: 'Skip', reasons: [] });

export function status(code: Code, ...reasons: string[]): Status {
  return { code, reasons };
}

export function isSuccess(s: Status): boolean {
  return s.code === 'Success' || s.code === 'Skip';
}

export interface Plugin {
  readonly name: string;
}

export interface PreFilterPlugin extends Plugin {
  /** Once per request and pod: classify, precompute into the cycle state. A failure fails every node alike. */
  preFilter(state: CycleState, pod: Pod): Status;
}

/**
 * Upstream PreFilterExtensions: keep what preFilter computed true when a pod is added to or removed from the node
 * being checked (nominated pods added by filter, victims removed by preempt). They must replace, never mutate, the
 * state they change: the runner hands them a clone of the cycle state that shares the values.
 */
export interface PreFilterExtensions extends Plugin {
  addPod(state: CycleState, podToSchedule: Pod, podToAdd: Pod, nodeInfo: NodeInfo): Status;
  removePod(state: CycleState, podToSchedule: Pod, podToRemove: Pod, nodeInfo: NodeInfo): Status;
}

export interface FilterPlugin extends Plugin {
  filter(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status;
}

export interface ScorePlugin extends Plugin {
  /** Raw score in 0..100 (kube-scheduler's MaxNodeScore); the runner maps the plugins' mean to the extender's 0..10. */
  score(state: CycleState, pod: Pod, nodeInfo: NodeInfo): number;
}

/** A node's score as upstream's framework.NodeScore: the plugin's raw score, then its normalized one. */
export interface NodeScore {
  name: string;
  score: number;
}

/**
 * Upstream PreScore and ScoreExtensions, for the default profile's scoring (explain and simulate; the verbs'
 * prioritize averages plain scores). preScore sees the feasible nodes once; Skip leaves the plugin out of this
 * cycle's scoring. normalizeScore rewrites every raw score in place to 0..100.
 */
export interface PreScorePlugin extends Plugin {
  preScore(state: CycleState, pod: Pod, nodes: readonly NodeInfo[]): Status;
}

export interface NormalizeScorePlugin extends Plugin {
  normalizeScore(state: CycleState, pod: Pod, scores: NodeScore[]): void;
}

/**
 * Upstream PreFilterResult: the only nodes worth filtering, when preFilter could tell (NodeAffinity on metadata.name);
 * undefined: all of them. Read after preFilter ran.
 */
export interface PreFilterResultPlugin extends Plugin {
  preFilterResult(state: CycleState): ReadonlySet<string> | undefined;
}

export interface ReservePlugin extends Plugin {
  /** Claims in-memory what binding will write (assume). Must be undone by unreserve on any later failure. */
  reserve(state: CycleState, pod: Pod, nodeName: string): Status;
  /** Idempotent. */
  unreserve(state: CycleState, pod: Pod, nodeName: string): void;
}

export interface PreBindPlugin extends Plugin {
  /** Writes what reserve claimed and waits until the cluster has carried it out. */
  preBind(state: CycleState, pod: Pod, nodeName: string, signal: AbortSignal): Promise<Status>;
}

/** Bounds on what an explanation lists per node, so an answer for thousands of nodes stays readable. */
export interface ExplainLimits {
  /** PVs listed per claim. */
  maxVolumes: number;
}

export interface ExplainPlugin extends Plugin {
  /**
   * The detail behind this plugin's verdict on a node, for operators (explain), after preFilter ran on `state`.
   * Never called by the verbs; undefined when the plugin has nothing to say for this pod.
   */
  explain(state: CycleState, pod: Pod, nodeInfo: NodeInfo, limits: ExplainLimits): object | undefined;
}

/** A plugin implements any subset of the extension points. */
export type AnyPlugin = Plugin &
  Partial<PreFilterPlugin> &
  Partial<PreFilterExtensions> &
  Partial<FilterPlugin> &
  Partial<ScorePlugin> &
  Partial<PreScorePlugin> &
  Partial<NormalizeScorePlugin> &
  Partial<PreFilterResultPlugin> &
  Partial<ReservePlugin> &
  Partial<PreBindPlugin> &
  Partial<ExplainPlugin>;
