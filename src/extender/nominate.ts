// Full delegation's blind spot: kube-scheduler runs its own filters only until percentageOfNodesToScore nodes pass
// (adaptive: 10 % of 5,000; never fewer than 100) and asks the extender about those alone. The one node a bound local
// claim allows, or the few with a free local PV, are seldom among them; a pod only an extender rejected then waits
// for a cluster event, up to the unschedulable queue's 5-minute flush. Upstream's VolumeBinding, one of those filters,
// never meets this.
//
// So when filter found no node for a pod with claims, the nominator searches every node as kube-scheduler's default
// profile with the volume plugins would, and sets the best one as the pod's status.nominatedNodeName. kube-scheduler
// tries a nominated node before any sample (findNodesThatFitPod → evaluateNominatedNode: its filters, then ours, on
// that node alone), and the pod's update event requeues it: an extender's rejection makes the pod wait for any event
// (the "Extender" rejector, kubernetes#122019). After a failed attempt, v1.36 and later write the pod's status from
// their informer's copy with the preemption's empty nomination (handleSchedulingFailure), which clears a nomination
// that landed while the attempt ran; the pod is requeued with that copy, so its retry still starts at the node, and
// the rejection's nomination here sets it again for any attempt after. v1.35 patches from the attempt's own copy.
//
// A pod whose claims are all bound to PVs few nodes satisfy (a StatefulSet pod recreated by a rollout or an eviction)
// is nominated as soon as the watch sees it, in a cluster larger than kube-scheduler's smallest sample: its first
// attempt may then start at its node, and if it starts first, the nomination is under way while it runs.
import type { NodeInfo } from '../cache/node-info.ts';
import type { ClusterStore } from '../cluster/store.ts';
import { objectKey, type Pod } from '../cluster/types.ts';
import { WriteError } from '../cluster/writer.ts';
import { CycleState } from '../framework/cycle-state.ts';
import { isSuccess } from '../framework/interfaces.ts';
import { defaultProfileFramework, selectHost } from '../ops/profile.ts';
import { hasClaims, podClaimRefs } from '../volumes/claims.ts';
import { affinityIndexEntries, type IndexEntries } from '../volumes/node-affinity.ts';
import type { ExtenderDeps } from './deps.ts';
import { podFromRequest } from './pod.ts';
import type { ExtenderArgs } from './wire.ts';

export type NominationResult = 'nominated' | 'kept' | 'nowhere' | 'failed';

/** kube-scheduler's minFeasibleNodesToFind: its sample is never smaller, so in a cluster this size it is every node. */
const MIN_FEASIBLE_NODES_TO_FIND = 100;
/** A search that stopped: at least as many nodes carry the pod's bound PVs' pairs as it was asked to accept. */
const TOO_MANY = Symbol('too many nodes');

export interface NodeNominatorOptions {
  /** The scheduler names whose new pods with bound claims are nominated before kube-scheduler asks (none: never). */
  schedulerNames?: readonly string[];
}

export class NodeNominator {
  readonly #deps: ExtenderDeps;
  /** Pods (UID) being searched for: a second rejection meanwhile finds the same node. */
  readonly #searching = new Set<string>();
  /**
   * Pod UID → the node this extender nominated. A pod asked about again with that nomination was refused there
   * (kube-scheduler tries it first), so the next search leaves it out. Dropped once the pod is bound or gone.
   */
  readonly #ours = new Map<string, string>();
  readonly #unsubscribe: () => void;
  readonly #schedulerNames: ReadonlySet<string>;
  /** New pods (UID → key) to nominate before kube-scheduler asks, one search a turn of the event loop. */
  readonly #early = new Map<string, string>();
  #earlyTimer?: NodeJS.Immediate;
  readonly #settled: (() => void)[] = [];
  /** Searches by result, for topology_extender_nominations_total. */
  readonly counts: Record<NominationResult, number> = { nominated: 0, kept: 0, nowhere: 0, failed: 0 };

  constructor(deps: ExtenderDeps, options: NodeNominatorOptions = {}, store: ClusterStore = deps.store) {
    this.#deps = deps;
    this.#schedulerNames = new Set(options.schedulerNames);
    this.#unsubscribe = store.on('Pod', (e) => {
      const uid = e.obj.metadata.uid ?? '';
      if (e.type === 'delete' || e.obj.spec.nodeName) {
        this.#ours.delete(uid);
        this.#early.delete(uid);
      } else if (e.type === 'add' && this.#pinnedByBoundClaims(e.obj)) {
        this.#early.set(uid, objectKey('Pod', e.obj));
        this.#earlyTimer ??= setImmediate(() => this.#nominateEarly());
      }
    });
  }

  /**
   * After a filter answer that passed no node: nominates, on a later turn of the event loop (the answer goes first),
   * the node where the pod fits. Resolves when done; never rejects (a nomination is a hint: failures are logged).
   */
  afterRejection(args: ExtenderArgs): Promise<NominationResult | undefined> {
    const pod = podFromRequest(args.Pod);
    const uid = pod.metadata.uid;
    if (!uid || !hasClaims(pod) || this.#searching.has(uid)) return Promise.resolve(undefined);
    const current = pod.status?.nominatedNodeName;
    // Another's nomination (kube-scheduler's, after preempting for the pod) stands: the pod waits for its victims.
    if (current && this.#ours.get(uid) !== current) return Promise.resolve(this.#count('kept'));
    const asked = new Set(args.NodeNames ?? args.Nodes?.items?.map((n) => n.metadata.name) ?? []);
    // Nominated before kube-scheduler's copy showed it (the watch saw the pod first): its next attempt tries the node.
    const ours = this.#ours.get(uid);
    const seen = this.#deps.store.get('Pod', objectKey('Pod', pod));
    if (!current && ours && !asked.has(ours) && seen?.status?.nominatedNodeName === ours)
      return Promise.resolve(this.#count('kept'));
    if (current) asked.add(current);
    this.#searching.add(uid);
    return new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#nominate(pod, uid, asked))
      .finally(() => this.#searching.delete(uid));
  }

  close(): void {
    this.#unsubscribe();
    if (this.#earlyTimer) clearImmediate(this.#earlyTimer);
    this.#early.clear();
    this.#release();
  }

  /**
   * A new pod of ours, unbound and not nominated, in a cluster kube-scheduler samples, whose every claim is bound to a
   * PV with an indexable node affinity: the nodes its volumes allow may all lie outside the sample.
   */
  #pinnedByBoundClaims(pod: Pod): boolean {
    if (!this.#schedulerNames.has(pod.spec.schedulerName ?? 'default-scheduler')) return false;
    if (pod.spec.nodeName || pod.status?.nominatedNodeName || pod.metadata.deletionTimestamp) return false;
    if (!hasClaims(pod) || this.#deps.cache.nodeCount() <= MIN_FEASIBLE_NODES_TO_FIND) return false;
    return this.#boundVolumeEntries(pod).allBound;
  }

  /**
   * The index entries of the PVs the pod's claims are bound to (affinityIndexEntries: every node a PV allows carries
   * one of its pairs), and whether every claim has such a PV.
   */
  #boundVolumeEntries(pod: Pod): { entries: IndexEntries[]; allBound: boolean } {
    const { store } = this.#deps;
    const namespace = pod.metadata.namespace ?? 'default';
    const entries: IndexEntries[] = [];
    let allBound = true;
    for (const ref of podClaimRefs(pod)) {
      const volumeName = store.get('PersistentVolumeClaim', `${namespace}/${ref.name}`)?.spec.volumeName;
      const pv = volumeName ? store.get('PersistentVolume', volumeName) : undefined;
      const pairs = pv && affinityIndexEntries(pv);
      if (pairs) entries.push(pairs);
      else allBound = false;
    }
    return { entries, allBound };
  }

  /** Resolves once every new pod queued for an early nomination has been searched for and its write answered. */
  earlySettled(): Promise<void> {
    if (this.#early.size === 0 && this.#searching.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#settled.push(resolve));
  }

  /** Nominates the next new pod queued by the watch; the one after is searched for on the next turn. */
  async #nominateEarly(): Promise<void> {
    this.#earlyTimer = undefined;
    const next = this.#early.entries().next();
    if (next.done) return this.#release();
    const [uid, key] = next.value;
    this.#early.delete(uid);
    if (this.#early.size > 0) this.#earlyTimer = setImmediate(() => this.#nominateEarly());
    const pod = this.#deps.store.get('Pod', key);
    if (!pod || pod.metadata.uid !== uid || !this.#pinnedByBoundClaims(pod) || this.#searching.has(uid))
      return this.#release();
    this.#searching.add(uid);
    try {
      await this.#nominate(pod, uid, new Set(), true);
    } finally {
      this.#searching.delete(uid);
      this.#release();
    }
  }

  #release(): void {
    if (this.#early.size > 0 || this.#searching.size > 0) return;
    for (const resolve of this.#settled.splice(0)) resolve();
  }

  /**
   * Early (the watch's new pod, before kube-scheduler asks): only where its bound PVs allow fewer nodes than
   * kube-scheduler's smallest sample, and on the pod as read (its resourceVersion: a pod bound or changed meanwhile is
   * left alone).
   */
  async #nominate(
    pod: Pod,
    uid: string,
    refused: ReadonlySet<string>,
    early = false,
  ): Promise<NominationResult | undefined> {
    const { logger, writer, store } = this.#deps;
    const key = objectKey('Pod', pod);
    const started = performance.now();
    let node: string | undefined;
    try {
      const found = this.#search(pod, refused, early ? MIN_FEASIBLE_NODES_TO_FIND : Number.POSITIVE_INFINITY);
      if (found === TOO_MANY) return undefined;
      node = found;
    } catch (err) {
      logger.error({ err, pod: key }, 'searching a node to nominate failed');
      return this.#count('failed');
    }
    if (!node) {
      logger.debug({ pod: key }, 'no node fits the pod: nothing to nominate');
      return this.#count('nowhere');
    }
    // The pod as the watch has it now, if it has it yet (kube-scheduler's watch may be ahead of ours): bound
    // meanwhile, or nominated by kube-scheduler, it is left alone. A pod recreated under its name is refused by the
    // write's UID precondition.
    const seen = store.get('Pod', key);
    if (seen?.metadata.uid === uid) {
      const nominated = seen.status?.nominatedNodeName;
      if (seen.spec.nodeName || nominated === node) return this.#count('kept');
      if (nominated && this.#ours.get(uid) !== nominated) return this.#count('kept');
    }
    const target = { namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name, uid };
    const searched = performance.now();
    try {
      await writer.nominatePod(early ? { ...target, resourceVersion: pod.metadata.resourceVersion } : target, node);
    } catch (err) {
      const gone = err instanceof WriteError && (err.code === 404 || err.code === 409);
      logger[gone ? 'debug' : 'warn']({ err, pod: key, node }, `nominating node "${node}" failed`);
      return this.#count('failed');
    }
    this.#ours.set(uid, node);
    const ms = { searchMs: Math.round(searched - started), writeMs: Math.round(performance.now() - searched) };
    if (early)
      logger.info(
        { pod: key, node, ...ms },
        `nominated node "${node}" before kube-scheduler's first attempt: the pod's bound claims allow few nodes, which its sample of nodes may miss`,
      );
    else
      logger.info(
        { pod: key, node, asked: refused.size, ...ms },
        `nominated node "${node}": none of the ${refused.size} node(s) kube-scheduler asked about fits the pod's volumes`,
      );
    return this.#count('nominated');
  }

  /**
   * The node kube-scheduler would choose, with every node judged: the volume plugins first (the verbs' framework,
   * cheap where a bound claim allows one node), then the default profile's filters and scores on those that pass.
   * Among equals a node no other pod is nominated to wins: two pods sent to one node's last free PV cost a retry.
   * TOO_MANY when `fewerThan` or more nodes carry the bound PVs' pairs (nothing judged).
   */
  #search(pod: Pod, refused: ReadonlySet<string>, fewerThan: number): string | typeof TOO_MANY | undefined {
    const { cache, framework, nominator } = this.#deps;
    const lookup = (name: string) => {
      const info = cache.nodeInfo(name);
      return info?.node ? info : undefined;
    };
    // Only nodes that carry a pair of each bound PV's affinity can pass the volume plugins: a bound local claim leaves
    // one name, which spares judging every node.
    const { entries } = this.#boundVolumeEntries(pod);
    const names = cache.nodeNames().filter((n) => {
      if (refused.has(n)) return false;
      const labels = entries.length > 0 ? cache.nodeInfo(n)?.node?.metadata.labels : undefined;
      return entries.every((pairs) => pairs.some(([key, value]) => labels?.[key] === value));
    });
    if (names.length >= fewerThan) return TOO_MANY;
    const volumesFit = framework.filterNodes(pod, names, lookup, () => '').feasible;
    if (volumesFit.length === 0) return undefined;
    const profile = defaultProfileFramework(this.#deps);
    const state = new CycleState();
    if (!isSuccess(profile.runPreFilter(state, pod))) return undefined;
    const narrowed = profile.preFilterResult(state);
    const fit: NodeInfo[] = [];
    for (const name of volumesFit) {
      const info = lookup(name);
      if (!info || (narrowed && !narrowed.nodeNames.has(name))) continue;
      if (isSuccess(profile.runFilterWithNominatedPods(state, pod, info))) fit.push(info);
    }
    if (fit.length === 0) return undefined;
    const free = fit.filter((n) => nominator.nominatedPodsForNode(n.name).every((p) => !hasClaims(p.pod)));
    const pool = free.length > 0 ? free : fit;
    return selectHost(profile, framework, state, pod, pool, lookup).name;
  }

  #count(result: NominationResult): NominationResult {
    this.counts[result]++;
    return result;
  }
}
