// The pending report's content: for one unbound pod, explain's FitError line, the deciding plugin per node as a
// histogram, its workload, whether preemption would help and whom it would evict, and for its claims the storage
// class and the zones with room; then the grouped views (by reason, workload, storage class). Computed step by step
// (judge yields between nodes) so that src/ops/pending-report.ts can run it between the verbs.
import type { ClusterStore } from '../cluster/store.ts';
import { namespaceOf, objectKey, type Pod } from '../cluster/types.ts';
import { claimClass } from '../cluster/volume-annotations.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import type { Framework } from '../framework/runner.ts';
import { selectVictimsOnNode } from '../preemption/select-victims.ts';
import { podClaimRefs } from '../volumes/claims.ts';
import { requestedStorage } from '../volumes/pv-matching.ts';
import { DEFAULT_SCHEDULER_NAME, type Judgement, judge } from './explain.ts';
import { type StorageView, zonesWithRoom } from './storage.ts';

export const GROUPINGS = ['reason', 'workload', 'zone'] as const;
export type Grouping = (typeof GROUPINGS)[number];

/** The reason of a pod that fits a node: kube-scheduler has not placed it yet, or its bind is in flight. */
export const SCHEDULABLE = 'Schedulable';

export interface PendingClaim {
  claim: string;
  storageClass: string;
  phase: string;
  requestBytes: number;
  /** Bound claims: their PV. */
  volume?: string;
  /** Unbound claims: zones with a free PV of the class at least this large or a CSIStorageCapacity admitting it. */
  zonesWithRoom?: string[];
}

export interface PendingPod {
  namespace: string;
  name: string;
  uid: string;
  schedulerName: string;
  /** The controller, as kubectl names it: `Deployment/api` (from its ReplicaSet), `StatefulSet/web`; `Pod/<name>` for none. */
  workload: string;
  createdAt?: string;
  /** explain's summary: kube-scheduler's PodScheduled message when no node fits. */
  summary: string;
  /** The reason given for the most nodes, its numbers stripped (a bounded metric label); `Schedulable` when one fits. */
  reason: string;
  /** The plugin that rejected the most nodes ('' when one fits). */
  plugin: string;
  /** Nodes that do not fit, by the plugin that rejected each (kube-scheduler's deciding plugin). */
  plugins: Record<string, number>;
  feasibleNodes: number;
  totalNodes: number;
  /** null when a node fits (nothing to preempt for). */
  preemption: { helps: boolean; node?: string; victims?: string[] } | null;
  claims: PendingClaim[];
  notes?: string[];
  computedAt: string;
}

export function isServed(pod: Pod, schedulerNames: ReadonlySet<string>): boolean {
  return schedulerNames.has(pod.spec.schedulerName || DEFAULT_SCHEDULER_NAME);
}

/** An unbound pod kube-scheduler still has to place: not finished, not being deleted. */
export function isPending(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return !pod.spec.nodeName && !pod.metadata.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed';
}

/** kube-scheduler tried the pod and could not place it, or it is gated: its PodScheduled condition is False. */
export function triedByScheduler(pod: Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False') ?? false;
}

/** Upstream reasons with their numbers stripped: `Insufficient cpu` stays, `node(s) had 3 ...` loses the 3. */
export function stripNumbers(reason: string): string {
  return reason
    .replace(/\d+(\.\d+)?/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The workload as kubectl names it: a ReplicaSet named `<deployment>-<pod-template-hash>` is its Deployment's. */
export function workloadOf(pod: Pod): string {
  const owner = pod.metadata.ownerReferences?.find((r) => r.controller) ?? pod.metadata.ownerReferences?.[0];
  if (!owner) return `Pod/${pod.metadata.name}`;
  const hash = pod.metadata.labels?.['pod-template-hash'];
  if (owner.kind === 'ReplicaSet' && hash && owner.name.endsWith(`-${hash}`))
    return `Deployment/${owner.name.slice(0, -hash.length - 1)}`;
  return `${owner.kind}/${owner.name}`;
}

/** The entry with the largest count (the bytewise smallest key among equals). */
function largest(counts: ReadonlyMap<string, number>): string | undefined {
  let best: string | undefined;
  for (const [k, n] of counts) {
    const b = best === undefined ? -1 : counts.get(best)!;
    if (n > b || (n === b && k < best!)) best = k;
  }
  return best;
}

/** The pod's claims as the report lists them, judged against `storage`. */
export function claimsOf(store: ClusterStore, pod: Pod, storage: StorageView): PendingClaim[] {
  return podClaimRefs(pod).map(({ name }) => {
    const pvc = store.get('PersistentVolumeClaim', `${namespaceOf(pod)}/${name}`);
    if (!pvc) return { claim: name, storageClass: '', phase: 'Missing', requestBytes: 0 };
    const storageClass = claimClass(pvc);
    const requestBytes = requestedStorage(pvc);
    const phase = pvc.status?.phase ?? 'Pending';
    if (pvc.spec.volumeName) return { claim: name, storageClass, phase, requestBytes, volume: pvc.spec.volumeName };
    return {
      claim: name,
      storageClass,
      phase,
      requestBytes,
      zonesWithRoom: zonesWithRoom(storage, storageClass, requestBytes),
    };
  });
}

/** What an entry is made of: a judgement's (explain's) or the same derived from the nodes judged again (pending-nodes.ts). */
export interface Outcome {
  summary: string;
  /** explain's notes; its note on preemption is left out (the preemption field says it). */
  notes?: readonly string[];
  feasibleNodes: number;
  totalNodes: number;
  deciding: ReadonlyMap<string, number>;
  reasons: ReadonlyMap<string, number>;
  preemptionCandidate?: string;
  framework: Framework;
  state: CycleState;
}

/** The report's entry for `pod`, step by step (explain's judge, then DefaultPreemption's victims). */
export function* explainPending(
  deps: ExtenderDeps,
  pod: Pod,
  storage: StorageView,
  now: number,
  /** Hears the judgement (the pending report keeps its verdicts per node). */
  judged?: (j: Judgement) => void,
): Generator<void, PendingPod> {
  const j = yield* judge(deps, pod, { limit: 0 });
  judged?.(j);
  const { answer } = j;
  return yield* pendingOf(deps, pod, { ...answer, ...j }, storage, now);
}

/** The report's entry for `pod` from what judged it: DefaultPreemption's victims on its candidate, the claims. */
export function* pendingOf(
  deps: ExtenderDeps,
  pod: Pod,
  o: Outcome,
  storage: StorageView,
  now: number,
): Generator<void, PendingPod> {
  let preemption: PendingPod['preemption'] = null;
  if (o.feasibleNodes === 0) {
    const node = o.preemptionCandidate;
    const info = node ? deps.cache.nodeInfo(node) : undefined;
    preemption = { helps: false };
    if (node && info) {
      yield;
      const pdbs = [...deps.store.list('PodDisruptionBudget')];
      const verdict = selectVictimsOnNode({ framework: o.framework, state: o.state, pod, pdbs, now }, info, []);
      if (verdict.kept)
        preemption = {
          helps: true,
          node,
          victims: verdict.victims.map((v) => (v.pod ? objectKey('Pod', v.pod) : v.uid)),
        };
    }
  }
  const reason = o.feasibleNodes > 0 ? SCHEDULABLE : stripNumbers(largest(o.reasons) ?? o.summary);
  // explain's note on preemption would repeat the preemption field; its other notes (schedulerName, kinds) stay.
  const notes = o.notes?.filter((n) => !n.startsWith('evicting lower-priority pods'));
  return {
    ...podFields(pod),
    summary: o.summary,
    reason,
    plugin: o.feasibleNodes > 0 ? '' : (largest(o.deciding) ?? ''),
    plugins: Object.fromEntries([...o.deciding].sort(([a], [b]) => (a < b ? -1 : 1))),
    feasibleNodes: o.feasibleNodes,
    totalNodes: o.totalNodes,
    preemption,
    claims: claimsOf(deps.store, pod, storage),
    ...(notes?.length ? { notes } : {}),
    computedAt: new Date(now).toISOString(),
  };
}

/** What is the pod's own in an entry: an equivalent pod's entry takes these from the pod it stands for. */
export function podFields(pod: Pod) {
  return {
    namespace: namespaceOf(pod),
    name: pod.metadata.name,
    uid: pod.metadata.uid,
    schedulerName: pod.spec.schedulerName || DEFAULT_SCHEDULER_NAME,
    workload: workloadOf(pod),
    ...(pod.metadata.creationTimestamp ? { createdAt: pod.metadata.creationTimestamp } : {}),
  };
}

export interface PendingGroup {
  /** The reason, `<namespace>/<workload>`, or the storage classes of the pods' unbound claims (`-`: none). */
  key: string;
  pods: number;
  /** by reason: the plugin giving it; by workload: the reasons of its pods. */
  plugin?: string;
  reasons?: string[];
  workloads?: number;
  /** by zone: per zone, the pods whose unbound claims all find room there. */
  zonesWithRoom?: Record<string, number>;
  /** Seconds since the group's oldest pod was created (null: none says when). */
  oldestAge: number | null;
  /** Up to three of its pods, `namespace/name`. */
  examples: string[];
}

/** Seconds since the pod was created (0 without a creationTimestamp). */
export function ageOf(p: { createdAt?: string }, now: number): number {
  const created = p.createdAt ? Date.parse(p.createdAt) : Number.NaN;
  return Number.isNaN(created) ? 0 : Math.max(0, Math.round((now - created) / 1000));
}

function unboundClasses(p: PendingPod): string {
  const classes = new Set(p.claims.filter((c) => c.zonesWithRoom).map((c) => c.storageClass || '""'));
  return classes.size === 0 ? '-' : [...classes].sort().join(',');
}

/** Each pod in exactly one group, so the groups' pods add up to the pods listed; largest group first. */
export function groupPending(items: readonly PendingPod[], by: Grouping, now: number): PendingGroup[] {
  const groups = new Map<string, { members: PendingPod[]; keyOf: string }>();
  for (const p of items) {
    const key = by === 'reason' ? p.reason : by === 'workload' ? `${p.namespace}/${p.workload}` : unboundClasses(p);
    const g = groups.get(key) ?? { members: [], keyOf: key };
    groups.set(key, g);
    g.members.push(p);
  }
  const rows = [...groups.values()].map(({ members, keyOf }) => {
    const count = (pick: (p: PendingPod) => string) => {
      const m = new Map<string, number>();
      for (const p of members) m.set(pick(p), (m.get(pick(p)) ?? 0) + 1);
      return m;
    };
    const row: PendingGroup = {
      key: keyOf,
      pods: members.length,
      oldestAge: members.some((p) => p.createdAt) ? Math.max(...members.map((p) => ageOf(p, now))) : null,
      examples: members.slice(0, 3).map((p) => `${p.namespace}/${p.name}`),
    };
    if (by === 'reason') {
      row.plugin = largest(count((p) => p.plugin)) ?? '';
      row.workloads = count((p) => `${p.namespace}/${p.workload}`).size;
    } else if (by === 'workload') row.reasons = [...count((p) => p.reason).keys()].sort();
    else {
      const zones = new Map<string, number>();
      for (const p of members) {
        const unbound = p.claims.filter((c) => c.zonesWithRoom);
        if (unbound.length === 0) continue;
        // A zone has room for the pod when every unbound claim of it finds room there.
        const [first, ...rest] = unbound.map((c) => c.zonesWithRoom ?? []);
        for (const z of first) if (rest.every((other) => other.includes(z))) zones.set(z, (zones.get(z) ?? 0) + 1);
      }
      row.zonesWithRoom = Object.fromEntries([...zones].sort(([a], [b]) => (a < b ? -1 : 1)));
    }
    return row;
  });
  return rows.sort((a, b) => b.pods - a.pods || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

export interface PendingQuery {
  namespace?: string;
  by?: Grouping;
}

export interface PendingAnswer {
  kubeSchedulerVersion: string;
  /** The schedulerNames whose pods the report covers. */
  schedulerNames: string[];
  /** Pods listed in `items` (and counted in `groups`). */
  pods: number;
  /** Pending pods the background worker has not explained yet (not listed). */
  notExplainedYet: number;
  /** Listed pods explained with an earlier state of the cluster than the current one (being refreshed). */
  refreshing: number;
  items: (PendingPod & { age: number | null })[];
  by?: Grouping;
  groups?: PendingGroup[];
}

/** The report's answer for a query: pods by namespace and name, and the grouped view asked for. */
export function pendingAnswer(
  snapshot: { items: readonly PendingPod[]; waiting: number; stale: number },
  schedulerNames: readonly string[],
  query: PendingQuery,
  now: number,
  /** The cluster's kube-scheduler minor, whose lines explain writes (kubeSchedulerMinor). */
  kubeSchedulerVersion: string,
): PendingAnswer {
  const items = snapshot.items
    .filter((p) => query.namespace === undefined || p.namespace === query.namespace)
    .sort((a, b) => (a.namespace + '/' + a.name < b.namespace + '/' + b.name ? -1 : 1))
    .map((p) => ({ ...p, age: p.createdAt ? ageOf(p, now) : null }));
  return {
    kubeSchedulerVersion,
    schedulerNames: [...schedulerNames],
    pods: items.length,
    notExplainedYet: snapshot.waiting,
    refreshing: snapshot.stale,
    items,
    ...(query.by ? { by: query.by, groups: groupPending(items, query.by, now) } : {}),
  };
}
