// A pending pod's explanation kept per node, so that the pending report judges again only the nodes whose pods
// changed (a pod bound, deleted, resized, nominated): each node's status and DefaultPreemption's dry-run verdict on it
// read that node and the pods on it or nominated to it, and nothing else, for a pod whose own terms read no other
// pods (no required pod (anti-)affinity, no spread constraints). The FitError line, the counts per reason and plugin,
// and PostFilter's part are then derived again from the per-node results with explain's own functions, so they are
// byte for byte what a full explain writes. What is not node-local is left to the report (pending-events.ts), which
// explains the pod afresh instead: any change of another kind (nodes, volumes, claims, PDBs, priority classes), a
// changed pod with required pod (anti-)affinity terms (InterPodAffinity's preFilter counts those over every node), or
// one naming a claim this pod names (VolumeRestrictions counts a ReadWriteOncePod claim's users over every node).
// test/ops/pending-nodes.test.ts checks the report kept this way against one computed afresh.
import type { Pod } from '../cluster/types.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import { isSuccess, type Status } from '../framework/interfaces.ts';
import { podClaimRefs } from '../volumes/claims.ts';
import {
  counted,
  decidingPlugin,
  explainNotes,
  fitErrorOf,
  type JudgeContext,
  type Judgement,
  judgeNode,
  kubeSchedulerMinor,
  NODES_PER_STEP,
} from './explain.ts';
import { type PendingPod, pendingOf } from './pending.ts';
import { CANDIDATE, type PreemptionVerdict, postFilterMessage, preemptionVerdict } from './post-filter.ts';
import type { StorageView } from './storage.ts';

/** Whether the pod's verdicts read pods on other nodes than the one judged (its own terms match other pods). */
export function readsPodsElsewhere(pod: Pod): boolean {
  const affinity = pod.spec.affinity;
  return (
    (affinity?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length ?? 0) > 0 ||
    (affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.length ?? 0) > 0 ||
    (pod.spec.topologySpreadConstraints?.length ?? 0) > 0
  );
}

/** The claims a pod names, `namespace/name`. */
export function claimKeys(pod: Pod): string[] {
  const ns = pod.metadata.namespace || 'default';
  return podClaimRefs(pod).map((r) => `${ns}/${r.name}`);
}

/** A node's status when it fits. */
const FITS = null;
/** No status or verdict, in NodeVerdicts' arrays of codes. */
const NOTHING = 0;

/** The last node list's positions: every explanation judges the cache's node list, the same until a Node event. */
let shared: { names: readonly string[]; index: ReadonlyMap<string, number> } | undefined;

function positions(names: readonly string[]): ReadonlyMap<string, number> {
  const same =
    shared &&
    (shared.names === names ||
      (shared.names.length === names.length && shared.names.every((name, i) => name === names[i])));
  if (!same) shared = { names, index: new Map(names.map((name, i) => [name, i])) };
  return shared!.index;
}

function sameStatus(a: Status, b: Status): boolean {
  return (
    a.code === b.code &&
    a.plugin === b.plugin &&
    a.reasons.length === b.reasons.length &&
    a.reasons.every((r, i) => r === b.reasons[i])
  );
}

/**
 * What the pods on a node (and nominated to it) are, as two 32-bit hashes XORed over their uids and resourceVersions
 * (NodeFingerprints; a change of labels alone keeps a pod's): equal again once a pod bound since is gone, so that a
 * node whose pods came and went between two refreshes is not judged again.
 */
export type Fingerprint = readonly [number, number];

const NONE: Fingerprint = [0, 0];

/** FNV-1a over `uid`, a NUL and `version`, without building the joined string (every pod of the cluster is hashed). */
function hash(uid: string, version: string, seed: number, prime: number): number {
  let h = seed;
  for (let i = 0; i < uid.length; i++) h = Math.imul(h ^ uid.charCodeAt(i), prime);
  h = Math.imul(h, prime); // the NUL between them
  for (let i = 0; i < version.length; i++) h = Math.imul(h ^ version.charCodeAt(i), prime);
  return h | 0;
}

/** No node in a pod slot. */
const NO_NODE = -1;

function grown(a: Int32Array<ArrayBuffer>, size: number): Int32Array<ArrayBuffer> {
  if (size <= a.length) return a;
  const b = new Int32Array(Math.max(size, a.length * 2));
  b.set(a);
  return b;
}

/**
 * Every node's Fingerprint, fed with the pods placed on it and taken off it. It holds every placed pod of the cluster
 * (450,000 at 15,000 nodes), so in typed arrays: per pod a slot with its two hashes and its at most two nodes (its own
 * and the one it is nominated to), per node its two XORs.
 */
export class NodeFingerprints {
  readonly #nodeIndex = new Map<string, number>();
  readonly #freeNodes: number[] = [];
  readonly #names: string[] = [];
  #printA = new Int32Array(1024);
  #printB = new Int32Array(1024);
  /** Per node, its placed pods: at none its XORs are 0 again and its index is let go (nodes come and go). */
  #podCount = new Int32Array(1024);
  /** Pod UID → its slot: what it XORed in, and where, taken out alike (a change of labels alone keeps it). */
  readonly #slots = new Map<string, number>();
  readonly #free: number[] = [];
  #used = 0;
  #podA = new Int32Array(1024);
  #podB = new Int32Array(1024);
  #podNode = new Int32Array(2048);

  /** `pod` is on or nominated to `nodes` (none: nothing to keep). */
  add(pod: Pod, nodes: readonly (string | undefined)[]): void {
    if (!nodes.some((name) => name)) return;
    // First: a node it leaves empty lets its index go.
    this.remove(pod);
    let first = NO_NODE;
    let second = NO_NODE;
    for (const name of nodes) {
      if (!name) continue;
      const i = this.#node(name);
      if (first === NO_NODE) first = i;
      else if (i !== first) second = i;
    }
    const uid = pod.metadata.uid;
    const version = pod.metadata.resourceVersion ?? '';
    // Two offset bases and primes: a false match needs both 32-bit hashes to collide.
    const a = hash(uid, version, 0x811c9dc5, 0x01000193);
    const b = hash(uid, version, 0x050c5d1f, 0x01000737);
    const slot = this.#free.pop() ?? this.#used++;
    this.#podA = grown(this.#podA, slot + 1);
    this.#podB = grown(this.#podB, slot + 1);
    this.#podNode = grown(this.#podNode, 2 * slot + 2);
    this.#podA[slot] = a;
    this.#podB[slot] = b;
    this.#podNode[2 * slot] = first;
    this.#podNode[2 * slot + 1] = second;
    this.#slots.set(uid, slot);
    this.#place(first, a, b, 1);
    if (second !== NO_NODE) this.#place(second, a, b, 1);
  }

  remove(pod: Pod): void {
    const slot = this.#slots.get(pod.metadata.uid);
    if (slot === undefined) return;
    this.#slots.delete(pod.metadata.uid);
    this.#free.push(slot);
    const a = this.#podA[slot];
    const b = this.#podB[slot];
    this.#place(this.#podNode[2 * slot], a, b, -1);
    const second = this.#podNode[2 * slot + 1];
    if (second !== NO_NODE) this.#place(second, a, b, -1);
  }

  of(node: string): Fingerprint {
    const i = this.#nodeIndex.get(node);
    return i === undefined ? NONE : [this.#printA[i], this.#printB[i]];
  }

  #node(name: string): number {
    let i = this.#nodeIndex.get(name);
    if (i === undefined) {
      i = this.#freeNodes.pop() ?? this.#nodeIndex.size;
      this.#nodeIndex.set(name, i);
      this.#printA = grown(this.#printA, i + 1);
      this.#printB = grown(this.#printB, i + 1);
      this.#podCount = grown(this.#podCount, i + 1);
      this.#names[i] = name;
    }
    return i;
  }

  #place(node: number, a: number, b: number, by: 1 | -1): void {
    this.#printA[node] ^= a;
    this.#printB[node] ^= b;
    this.#podCount[node] += by;
    if (this.#podCount[node] === 0) {
      this.#nodeIndex.delete(this.#names[node]);
      this.#freeNodes.push(node);
    }
  }
}

export class NodeVerdicts {
  /** The pod judged. */
  readonly pod: Pod;
  /** Its claims (a changed pod naming one is not node-local for it). */
  readonly claims: ReadonlySet<string>;
  readonly #context: JudgeContext;
  readonly #names: readonly string[];
  readonly #index: ReadonlyMap<string, number>;
  readonly #minor: number;
  /**
   * Per node (by position in #names): the status kube-scheduler counts, FITS when the node fits; as its code in #values
   * (two bytes a node, not an eight-byte reference: hundreds of explanations of 15,000 nodes are kept).
   */
  #statuses: Uint16Array | Uint32Array;
  /** Per node: filtered, not left out by a narrowing preFilter (which reads the pod only). */
  readonly #judged: Uint8Array;
  /** Per node: DefaultPreemption's verdict's code, NOTHING where its dry run has not tried the node as it is now. */
  #tried: Uint16Array | Uint32Array;
  /** Per node: the Fingerprint of its pods when its status was judged; #seen 0 where not known. */
  readonly #printA: Int32Array;
  readonly #printB: Int32Array;
  readonly #seen: Uint8Array;
  readonly #fingerprints: NodeFingerprints;
  /** Statuses by content: the nodes share a few (5,000 nodes, hundreds of explanations kept). */
  readonly #interned = new Map<string, Status>();
  #lastInterned?: Status;
  /** The interned statuses and verdicts by code (NOTHING, then FITS, then as first met), and their codes. */
  readonly #values: (Status | PreemptionVerdict | typeof FITS | undefined)[] = [undefined, FITS];
  readonly #codes = new Map<Status | PreemptionVerdict | typeof FITS, number>([[FITS, 1]]);
  /** How many filtered nodes have each status (FITS: fit), so that a refresh counts without a pass over the nodes. */
  readonly #counts = new Map<Status | typeof FITS, number>();
  /** Nodes a narrowing preFilter left out, and their status (one for all). */
  #unjudged = 0;
  #unjudgedStatus?: Status;
  /** The node where evicting makes room, as last derived (a change of its pods' labels changes the victims). */
  candidate?: string;

  private constructor(j: Judgement, fingerprints: NodeFingerprints) {
    this.#fingerprints = fingerprints;
    this.pod = j.pod;
    this.claims = new Set(claimKeys(j.pod));
    this.#context = j.context;
    this.#names = j.names;
    this.#minor = j.minor;
    const n = j.names.length;
    this.#statuses = new Uint16Array(n);
    this.#judged = new Uint8Array(n);
    this.#tried = new Uint16Array(n);
    this.#printA = new Int32Array(n);
    this.#printB = new Int32Array(n);
    this.#seen = new Uint8Array(n);
    this.#index = positions(j.names);
    j.names.forEach((name, i) => {
      const failed = j.statuses.get(name);
      const narrowedOut = j.context.narrowed !== undefined && !j.context.narrowed.nodeNames.has(name);
      if (narrowedOut) {
        // judge keeps only the filtered nodes' statuses: the narrowing's is given without running a filter.
        this.#unjudged++;
        this.#unjudgedStatus ??= judgeNode(j.context, name).s;
      } else {
        this.#judged[i] = 1;
        this.#set(i, failed ? this.#intern(failed) : FITS);
      }
      const v = j.tried.get(name);
      if (v !== undefined) this.#tried[i] = this.#code(this.#intern(v));
      this.#print(i, name);
    });
    this.candidate = j.preemptionCandidate;
  }

  /**
   * The judgement kept per node; undefined for a pod whose verdicts read pods elsewhere. Taken when judge ended: the
   * caller says which nodes changed while it ran (forget), whose Fingerprint is then not the one judged.
   */
  static of(j: Judgement, fingerprints: NodeFingerprints): NodeVerdicts | undefined {
    return readsPodsElsewhere(j.pod) ? undefined : new NodeVerdicts(j, fingerprints);
  }

  /** The node's pods changed since it was judged: its Fingerprint is unknown (judged again when changed). */
  forget(node: string | undefined): void {
    const i = node === undefined ? undefined : this.#index.get(node);
    if (i !== undefined) this.#seen[i] = 0;
  }

  #print(i: number, name: string): void {
    const [a, b] = this.#fingerprints.of(name);
    this.#printA[i] = a;
    this.#printB[i] = b;
    this.#seen[i] = 1;
  }

  /**
   * Judges the `changed` nodes again, then derives the entry from every node's result; a step per NODES_PER_STEP
   * nodes judged and per dry run. undefined when the cluster's kube-scheduler minor changed (explain afresh).
   */
  *refresh(
    deps: ExtenderDeps,
    changed: Iterable<string>,
    storage: StorageView,
    now: number,
  ): Generator<void, PendingPod | undefined> {
    const c = this.#context;
    const minorName = kubeSchedulerMinor(deps.clusterVersion?.());
    if (Number(minorName.split('.')[1]) !== this.#minor) return undefined;
    let step = 0;
    for (const name of changed) {
      const i = this.#index.get(name);
      if (i === undefined || !this.#judged[i]) continue;
      // The dry run may have tried the node as it was in between: tried again when needed (no node fits).
      this.#tried[i] = NOTHING;
      const [a, b] = this.#fingerprints.of(name);
      // Its pods are those it was judged with (a pod bound since is gone again).
      if (this.#seen[i] && this.#printA[i] === a && this.#printB[i] === b) continue;
      if (step++ % NODES_PER_STEP === 0) yield;
      const { s } = judgeNode(c, name);
      const old = this.#status(i);
      if (isSuccess(s)) this.#set(i, FITS);
      else {
        const now = counted(s, c.delegated);
        this.#set(i, old !== FITS && old !== undefined && sameStatus(old, now) ? old : this.#intern(now));
      }
      this.#print(i, name);
    }
    const n = this.#names.length;
    const feasible = this.#counts.get(FITS) ?? 0;
    const filtered = n - this.#unjudged;
    const deciding = new Map<string, number>();
    const failed: Status[] = [];
    const decide = (plugin: string, k: number) => deciding.set(plugin, (deciding.get(plugin) ?? 0) + k);
    for (const [s, k] of this.#counts) {
      if (s === FITS) continue;
      decide(decidingPlugin(c, s, true), k);
      // Only counted (fitErrorOf), in no order: the nodes' order matters to preemption alone.
      if (feasible === 0) for (let m = 0; m < k; m++) failed.push(s);
    }
    if (this.#unjudgedStatus) decide(decidingPlugin(c, this.#unjudgedStatus, false), this.#unjudged);
    let summary = `${feasible}/${n} nodes are available`;
    let reasons = new Map<string, number>();
    let candidate: string | undefined;
    if (feasible === 0) {
      ({ summary, reasons } = fitErrorOf(c, n, failed, filtered));
      // As judge: a preFilter's UnschedulableAndUnresolvable ends PostFilter before DefaultPreemption.
      if (c.podPre.code === 'UnschedulableAndUnresolvable') summary += ' not found';
      else {
        const found = yield* this.#preemption();
        candidate = found.candidate;
        if (found.message) summary += ` ${found.message}`;
      }
    }
    this.candidate = candidate;
    const outcome = {
      summary,
      notes: explainNotes(deps, this.pod, minorName),
      feasibleNodes: feasible,
      totalNodes: n,
      deciding,
      reasons,
      preemptionCandidate: candidate,
      framework: c.framework,
      state: c.state,
    };
    return yield* pendingOf(deps, this.pod, outcome, storage, now);
  }

  /** PostFilter's part, as postFilter derives it (no node fits): the dry run tries the failed nodes in order. */
  *#preemption(): Generator<void, { message: string; candidate?: string }> {
    const c = this.#context;
    const n = this.#names.length;
    if (this.pod.spec.preemptionPolicy === 'Never')
      return { message: postFilterMessage(this.pod, this.#minor, n, null) };
    const d = c.delegated;
    const framework = d?.scheduler ?? c.framework;
    const run = {
      framework,
      state: d?.schedulerState ?? c.state,
      pod: this.pod,
      priority: framework.priorityOf(this.pod),
      lookup: (name: string) => c.deps.cache.nodeInfo(name),
      extender: d && { framework: d.extender, state: d.extenderState },
    };
    const verdicts: PreemptionVerdict[] = [];
    // A preFilter's rejection: judge hands postFilter no node.
    if (isSuccess(c.podPre))
      for (let i = 0; i < n; i++) {
        const s = this.#status(i);
        if (s === FITS || s === undefined || !this.#judged[i]) continue;
        let v = this.#values[this.#tried[i]] as PreemptionVerdict | undefined;
        if (v === undefined) {
          yield;
          v = this.#intern(preemptionVerdict(run, this.#names[i], s));
          this.#tried[i] = this.#code(v);
        }
        if (v === CANDIDATE) return { message: '', candidate: this.#names[i] };
        verdicts.push(v);
      }
    return { message: postFilterMessage(this.pod, this.#minor, n, verdicts) };
  }

  /** Node `i` (filtered) now has status `s`. */
  #set(i: number, s: Status | typeof FITS): void {
    const old = this.#status(i);
    if (old === s) return;
    if (old !== undefined) {
      const k = this.#counts.get(old)! - 1;
      if (k > 0) this.#counts.set(old, k);
      else this.#counts.delete(old);
    }
    this.#statuses[i] = this.#code(s);
    this.#counts.set(s, (this.#counts.get(s) ?? 0) + 1);
  }

  /** Node `i`'s status (undefined: not filtered). */
  #status(i: number): Status | typeof FITS | undefined {
    return this.#values[this.#statuses[i]] as Status | typeof FITS | undefined;
  }

  /** The code of an interned status or verdict. */
  #code(v: Status | PreemptionVerdict | typeof FITS): number {
    let code = this.#codes.get(v);
    if (code === undefined) {
      code = this.#values.length;
      this.#values.push(v);
      this.#codes.set(v, code);
      // A few codes serve most pods; past two bytes' worth, four.
      if (code > 0xffff && this.#statuses instanceof Uint16Array) {
        this.#statuses = Uint32Array.from(this.#statuses);
        this.#tried = Uint32Array.from(this.#tried);
      }
    }
    return code;
  }

  #intern<T extends Status | PreemptionVerdict>(s: T): T {
    if (typeof s === 'string') return s;
    const st = s as Status;
    // Neighbouring nodes mostly fail alike: compared before a key is built.
    if (this.#lastInterned && sameStatus(this.#lastInterned, st)) return this.#lastInterned as T;
    const key = `${st.code}\u0000${st.plugin ?? ''}\u0000${st.reasons.join('\u0000')}`;
    const held = this.#interned.get(key);
    if (held) {
      this.#lastInterned = held;
      return held as T;
    }
    this.#interned.set(key, st);
    this.#lastInterned = st;
    return s;
  }
}
