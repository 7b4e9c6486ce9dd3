// What one pod asks of its node, computed the way kube-scheduler does
// (component-helpers/resource PodRequests, framework NodeInfo.calculateResource), and node allocatable.
import { parseMilli, parseValue } from '../cluster/quantity.ts';
import type { Container, Pod, ResourceList } from '../cluster/types.ts';
import type { Resource } from './node-info.ts';

/** Upstream schedutil.DefaultMilliCPURequest: what a container without a CPU request counts as for scoring. */
export const DEFAULT_MILLI_CPU_REQUEST = 100;
/** Upstream schedutil.DefaultMemoryRequest (200 MiB). */
export const DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024;

export interface PodResource {
  /** Effective requests; `pods` is 1 so that summing pods gives the node's pod count. */
  readonly requests: Resource;
  /** CPU and memory with upstream's defaults for containers that leave them out. */
  readonly nonZeroMilliCPU: number;
  readonly nonZeroMemory: number;
}

export function emptyResource(): Resource {
  return { milliCPU: 0, memory: 0, ephemeralStorage: 0, pods: 0, scalar: {} };
}

export function cloneResource(r: Readonly<Resource>): Resource {
  return { ...r, scalar: { ...r.scalar } };
}

/** into += sign × from. Scalars that reach zero are dropped, so equal usage always has equal shape. */
export function addResource(into: Resource, from: Readonly<Resource>, sign: 1 | -1): void {
  into.milliCPU += sign * from.milliCPU;
  into.memory += sign * from.memory;
  into.ephemeralStorage += sign * from.ephemeralStorage;
  into.pods += sign * from.pods;
  for (const [name, value] of Object.entries(from.scalar)) {
    const next = (into.scalar[name] ?? 0) + sign * value;
    if (next === 0) delete into.scalar[name];
    else into.scalar[name] = next;
  }
}

/**
 * Upstream v1helper.IsScalarResourceName: extended resources (a domain-prefixed name), `kubernetes.io/` prefixed
 * native resources, hugepages and attachable volume counts. Other unprefixed names are not scheduled on.
 */
export function isScalarResourceName(name: string): boolean {
  if (name.startsWith('hugepages-') || name.startsWith('attachable-volumes-')) return true;
  if (name.includes('kubernetes.io/')) return true;
  return name.includes('/') && !name.startsWith('requests.');
}

/** A quantity the API server would have rejected counts as zero: one bad object must not stop the cache. */
function amount(name: string, value: string | number): number {
  try {
    return name === 'cpu' ? parseMilli(value) : parseValue(value);
  } catch {
    return 0;
  }
}

/** Numeric resource list: cpu in milli-units, everything else in base units. */
type Amounts = Map<string, number>;

function toAmounts(list: ResourceList | undefined): Amounts {
  const out: Amounts = new Map();
  if (list) for (const [name, value] of Object.entries(list)) out.set(name, amount(name, value));
  return out;
}

function addInto(into: Amounts, from: Amounts): void {
  for (const [name, value] of from) into.set(name, (into.get(name) ?? 0) + value);
}

function maxInto(into: Amounts, from: Amounts): void {
  for (const [name, value] of from) into.set(name, Math.max(into.get(name) ?? 0, value));
}

/** Container requests; with defaults, a resource the container leaves out (absent, not zero) gets the default. */
function containerAmounts(c: Container, defaults: Amounts | undefined): Amounts {
  const out = toAmounts(c.resources?.requests);
  if (defaults) for (const [name, value] of defaults) if (!out.has(name)) out.set(name, value);
  return out;
}

/**
 * The sidecar KEP's formula: regular containers and sidecars (init containers with restartPolicy Always) run
 * together; each classic init container runs alongside the sidecars started before it; the pod needs the larger of
 * the steady state and the peak of any init step. Overhead comes on top.
 */
function podAmounts(pod: Pod, defaults: Amounts | undefined): Amounts {
  const result: Amounts = new Map();
  for (const c of pod.spec.containers ?? []) addInto(result, containerAmounts(c, defaults));
  const sidecars: Amounts = new Map();
  const initPeak: Amounts = new Map();
  for (const c of pod.spec.initContainers ?? []) {
    const own = containerAmounts(c, defaults);
    if (c.restartPolicy === 'Always') {
      addInto(result, own);
      addInto(sidecars, own);
      maxInto(initPeak, sidecars);
    } else {
      const step = new Map(own);
      addInto(step, sidecars);
      maxInto(initPeak, step);
    }
  }
  maxInto(result, initPeak);
  addInto(result, toAmounts(pod.spec.overhead));
  return result;
}

function amountsToResource(amounts: Amounts): Resource {
  const r = emptyResource();
  for (const [name, value] of amounts) {
    switch (name) {
      case 'cpu':
        r.milliCPU += value;
        break;
      case 'memory':
        r.memory += value;
        break;
      case 'ephemeral-storage':
        r.ephemeralStorage += value;
        break;
      case 'pods':
        r.pods += value;
        break;
      default:
        if (isScalarResourceName(name) && value !== 0) r.scalar[name] = (r.scalar[name] ?? 0) + value;
    }
  }
  return r;
}

const NON_ZERO_DEFAULTS: Amounts = new Map([
  ['cpu', DEFAULT_MILLI_CPU_REQUEST],
  ['memory', DEFAULT_MEMORY_REQUEST],
]);

/** Pod-level `spec.resources` is not in our trimmed Pod, so container-level requests are the whole story. */
export function podResource(pod: Pod): PodResource {
  const requests = amountsToResource(podAmounts(pod, undefined));
  requests.pods = 1;
  const nonZero = podAmounts(pod, NON_ZERO_DEFAULTS);
  return {
    requests,
    nonZeroMilliCPU: nonZero.get('cpu') ?? 0,
    nonZeroMemory: nonZero.get('memory') ?? 0,
  };
}

/**
 * podResource, shared by the pods whose requests one container list decides (no init containers, no overhead).
 * Trimming gives a workload's pods one list (src/cluster/trim.ts), so 150,000 running pods hold a few thousand of
 * these, not one each. Frozen: a shared answer must not be changed by one of its pods.
 */
export function sharedPodResource(pod: Pod): PodResource {
  const { containers, initContainers, overhead } = pod.spec;
  if (!containers || initContainers?.length || overhead) return podResource(pod);
  let r = byContainers.get(containers);
  if (!r) {
    r = podResource(pod);
    Object.freeze(Object.freeze(r.requests).scalar);
    byContainers.set(containers, Object.freeze(r));
  }
  return r;
}
const byContainers = new WeakMap<readonly Container[], PodResource>();

/** Node allocatable (or capacity) as a Resource, like upstream NewResource. */
export function resourceFromList(list: ResourceList | undefined): Resource {
  return amountsToResource(toAmounts(list));
}
