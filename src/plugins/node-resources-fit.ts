// NodeResourcesFit (upstream plugins/noderesources/fit.go): the pod's requests (the sidecar formula, overhead,
// extended resources) must fit what the node's pods leave of its allocatable, and the node must take one more pod.
// Scores with upstream's default strategy, LeastAllocated over cpu and memory (weight 1 each).
import type { NodeInfo, Resource } from '../cache/node-info.ts';
import { type PodResource, podResource } from '../cache/resources.ts';
import type { Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type FilterPlugin,
  type PreFilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import { MAX_NODE_SCORE } from '../framework/runner.ts';

export const NODE_RESOURCES_FIT = 'NodeResourcesFit';
export const ERR_REASON_TOO_MANY_PODS = 'Too many pods';
const PRE_FILTER_KEY = 'PreFilterNodeResourcesFit';

/** Upstream InsufficientResource: what was asked, what the node's pods use, and what it has (base units, milli-CPU). */
export interface InsufficientResource {
  resourceName: string;
  reason: string;
  requested: number;
  used: number;
  capacity: number;
  /** More than the node has at all: no eviction can help (preemption skips such nodes). */
  unresolvable: boolean;
}

/** Upstream fitsRequest: every shortage, "Too many pods" first, then cpu, memory, ephemeral-storage, scalars. */
export function fitsRequest(request: Readonly<Resource>, nodeInfo: NodeInfo): InsufficientResource[] {
  const out: InsufficientResource[] = [];
  const { allocatable, requested } = nodeInfo;
  const pods = nodeInfo.pods.size;
  if (pods + 1 > allocatable.pods) {
    out.push({
      resourceName: 'pods',
      reason: ERR_REASON_TOO_MANY_PODS,
      requested: 1,
      used: pods,
      capacity: allocatable.pods,
      unresolvable: false,
    });
  }
  const scalars = Object.entries(request.scalar).filter(([, v]) => v !== 0);
  if (request.milliCPU === 0 && request.memory === 0 && request.ephemeralStorage === 0 && scalars.length === 0) {
    return out;
  }
  const check = (name: string, want: number, have: number, used: number) => {
    if (want > 0 && want > have - used) {
      out.push({
        resourceName: name,
        reason: `Insufficient ${name}`,
        requested: want,
        used,
        capacity: have,
        unresolvable: want > have,
      });
    }
  };
  check('cpu', request.milliCPU, allocatable.milliCPU, requested.milliCPU);
  check('memory', request.memory, allocatable.memory, requested.memory);
  check('ephemeral-storage', request.ephemeralStorage, allocatable.ephemeralStorage, requested.ephemeralStorage);
  for (const [name, want] of scalars) check(name, want, allocatable.scalar[name] ?? 0, requested.scalar[name] ?? 0);
  return out;
}

/**
 * fitsRequest's verdict as bits, without building it: which of pods, cpu, memory and ephemeral-storage fall short, and
 * which of those beyond what the node has at all; -1 for a request of extended resources (not summarised here). The
 * status follows from the bits alone, so filter builds it once per combination: explain and the pending report filter
 * every node for every pod, and most nodes fail the same few ways.
 */
function shortages(request: Readonly<Resource>, nodeInfo: NodeInfo): number {
  for (const name in request.scalar) if (request.scalar[name] !== 0) return -1;
  const { allocatable, requested } = nodeInfo;
  let bits = nodeInfo.pods.size + 1 > allocatable.pods ? 1 : 0;
  const check = (bit: number, want: number, have: number, used: number) => {
    if (want > 0 && want > have - used) bits |= want > have ? bit | (bit << 1) : bit;
  };
  check(2, request.milliCPU, allocatable.milliCPU, requested.milliCPU);
  check(8, request.memory, allocatable.memory, requested.memory);
  check(32, request.ephemeralStorage, allocatable.ephemeralStorage, requested.ephemeralStorage);
  return bits;
}

function statusOf(short: readonly InsufficientResource[]): Status {
  const code = short.some((s) => s.unresolvable) ? 'UnschedulableAndUnresolvable' : 'Unschedulable';
  return status(code, ...short.map((s) => s.reason));
}

/** Filter's statuses by shortages(): at most 2^7, never mutated (the runner copies a status to name its plugin). */
const STATUS_BY_SHORTAGES = new Map<number, Status>();

/** leastRequestedScore: the free share after placing the pod, 0 when it does not fit. */
function leastRequestedScore(requested: number, capacity: number): number {
  if (capacity === 0 || requested > capacity) return 0;
  return Math.trunc(((capacity - requested) * MAX_NODE_SCORE) / capacity);
}

export class NodeResourcesFitPlugin implements PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin {
  readonly name = NODE_RESOURCES_FIT;

  preFilter(state: CycleState, pod: Pod): Status {
    state.write(PRE_FILTER_KEY, podResource(pod));
    return SUCCESS;
  }

  #request(state: CycleState, pod: Pod): PodResource {
    return state.read<PodResource>(PRE_FILTER_KEY) ?? podResource(pod);
  }

  filter(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    const request = this.#request(state, pod).requests;
    const bits = shortages(request, nodeInfo);
    if (bits === 0) return SUCCESS;
    if (bits < 0) {
      const short = fitsRequest(request, nodeInfo);
      return short.length === 0 ? SUCCESS : statusOf(short);
    }
    let s = STATUS_BY_SHORTAGES.get(bits);
    if (!s) {
      s = statusOf(fitsRequest(request, nodeInfo));
      STATUS_BY_SHORTAGES.set(bits, s);
    }
    return s;
  }

  /** The numbers behind each shortage, for explain. */
  explain(state: CycleState, pod: Pod, nodeInfo: NodeInfo): object | undefined {
    const short = fitsRequest(this.#request(state, pod).requests, nodeInfo);
    return short.length > 0 ? { insufficient: short } : undefined;
  }

  preScore(state: CycleState, pod: Pod): Status {
    state.write(PRE_FILTER_KEY, this.#request(state, pod));
    return SUCCESS;
  }

  /** LeastAllocated over cpu and memory: the pod's requests with upstream's defaults for containers without. */
  score(state: CycleState, pod: Pod, nodeInfo: NodeInfo): number {
    const r = this.#request(state, pod);
    const { allocatable, nonZeroRequested } = nodeInfo;
    let sum = 0;
    let weights = 0;
    for (const [alloc, req] of [
      [allocatable.milliCPU, nonZeroRequested.milliCPU + r.nonZeroMilliCPU],
      [allocatable.memory, nonZeroRequested.memory + r.nonZeroMemory],
    ]) {
      if (alloc === 0) continue;
      sum += leastRequestedScore(req, alloc);
      weights++;
    }
    return weights === 0 ? 0 : Math.trunc(sum / weights);
  }
}
