// VolumeBinding (upstream plugins/volumebinding/volume_binding.go) over the binder in src/volumes: preFilter
// classifies the pod's claims, filter finds volumes per node, score rates storage capacity, reserve assumes,
// preBind writes and waits, unreserve reverts.
import type { NodeInfo } from '../cache/node-info.ts';
import type { CSIStorageCapacity, Node, Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import {
  type ExplainLimits,
  type ExplainPlugin,
  type FilterPlugin,
  type PreBindPlugin,
  type PreFilterExtensions,
  type PreFilterPlugin,
  type ReservePlugin,
  type ScorePlugin,
  SKIP,
  type Status,
  SUCCESS,
  status,
} from '../framework/interfaces.ts';
import type { BindingInfo, FindOptions, HeldVolumes, PodVolumes, VolumeBinder } from '../volumes/binder.ts';
import { hasClaims, type PodVolumeClaims } from '../volumes/claims.ts';
import { type Decision, DecisionCache } from '../volumes/decisions.ts';
import { capacityBytes } from '../volumes/provisioning.ts';
import { claimKey, claimMatchInput, pvCapacity } from '../volumes/pv-matching.ts';
import { type Reservation, VolumeReservations } from '../volumes/reservations.ts';
import type { CapacityScorer, StorageResource } from '../volumes/scorer.ts';

/** Reasons as upstream's plugin spells them. */
export const ERR_REASON_UNBOUND_IMMEDIATE = 'pod has unbound immediate PersistentVolumeClaims';

export const VOLUME_BINDING = 'VolumeBinding';
const STATE_KEY = 'PreFilter/VolumeBinding';

interface StateData {
  skip: boolean;
  claims?: PodVolumeClaims;
  podVolumesByNode: Map<string, PodVolumes>;
  reservation?: Reservation;
  /** What nominated pods added to the node being checked would take there (filter's first pass only). */
  held?: HeldVolumes;
  /**
   * A pod was removed from the node (preemption's victim selection): filter answers for a node that is not the
   * cluster's, so it remembers nothing for the prioritize and bind that follow.
   */
  whatIf?: boolean;
  /** The pod's latest filter's decisions (DecisionCache.latestForPod), read once for score. */
  decided?: ReadonlyMap<string, Decision>;
  decidedRead?: boolean;
}

function addClassResource(
  classResources: Map<string, StorageResource>,
  className: string,
  requested: number,
  capacity: number,
): void {
  const r = classResources.get(className);
  if (r) {
    r.requested += requested;
    r.capacity += capacity;
  } else classResources.set(className, { requested, capacity });
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class VolumeBindingPlugin
  implements
    PreFilterPlugin,
    PreFilterExtensions,
    ExplainPlugin,
    FilterPlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin
{
  readonly name = VOLUME_BINDING;
  readonly binder: VolumeBinder;
  /** Cross-cycle state, owned by the scheduling state (src/framework/scheduling-state.ts) when wired. */
  readonly decisions: DecisionCache;
  readonly #reservations: VolumeReservations;
  readonly #scorer: CapacityScorer | undefined;
  readonly #now: () => number;
  /** findPodVolumes' options, refilled per call (read during the call only): the per-node filter allocates none. */
  readonly #find: FindOptions = { held: undefined, ordinal: undefined };

  constructor(
    binder: VolumeBinder,
    scorer?: CapacityScorer,
    now: () => number = Date.now,
    shared: { decisions: DecisionCache; reservations: VolumeReservations } = {
      decisions: new DecisionCache(),
      reservations: new VolumeReservations(),
    },
  ) {
    this.binder = binder;
    this.#scorer = scorer;
    this.#now = now;
    this.decisions = shared.decisions;
    this.#reservations = shared.reservations;
  }

  preFilter(state: CycleState, pod: Pod): Status {
    const { status: s, data } = this.#classify(pod);
    state.write(STATE_KEY, data);
    return s;
  }

  #classify(pod: Pod): { status: Status; data: StateData } {
    const data: StateData = { skip: true, podVolumesByNode: new Map() };
    if (!hasClaims(pod)) return { status: SKIP, data };
    const reason = this.binder.podClaimsError(pod);
    if (reason) return { status: status('UnschedulableAndUnresolvable', reason), data };
    let claims: PodVolumeClaims;
    try {
      claims = this.binder.getPodVolumeClaims(pod);
    } catch (err) {
      return { status: status('Error', errorMessage(err)), data };
    }
    if (claims.unboundClaimsImmediate.length > 0) {
      // The PV controller binds these; the pod is retried once it has.
      return { status: status('UnschedulableAndUnresolvable', ERR_REASON_UNBOUND_IMMEDIATE), data };
    }
    data.skip = false;
    data.claims = claims;
    return { status: SUCCESS, data };
  }

  #state(state: CycleState, pod: Pod): StateData {
    let data = state.read<StateData>(STATE_KEY);
    if (!data) {
      data = this.#classify(pod).data;
      state.write(STATE_KEY, data);
    }
    return data;
  }

  filter(state: CycleState, pod: Pod, nodeInfo: NodeInfo): Status {
    const data = this.#state(state, pod);
    if (data.skip || !data.claims) return SUCCESS;
    const node = nodeInfo.node;
    // A node deleted while pods still reference it has no labels to match volumes against: it cannot host them.
    // (An Error would fail the whole request; upstream never filters such nodes.)
    if (!node) return status('UnschedulableAndUnresolvable', 'node(s) were unknown');
    const generation = this.binder.generation();
    let found: ReturnType<VolumeBinder['findPodVolumes']>;
    try {
      found = this.binder.findPodVolumes(pod, data.claims, node, this.#findOptions(data.held, nodeInfo.ordinal));
    } catch (err) {
      return status('Error', errorMessage(err));
    }
    if (found.reasons.length > 0) {
      // Counted for the verbs (and preempt's filter runs), not for explain or the pending report, which re-judge
      // every pending pod on every change and would drown what kube-scheduler was told.
      if (found.jointOnly && !state.analysis) this.binder.jointOnlyRejections++;
      return status('UnschedulableAndUnresolvable', ...found.reasons);
    }
    // With nominated pods the first pass decides (it avoids what they hold); the second only confirms the fit. Such a
    // choice is kept whole; of the others only the score prioritize will read (reserve finds the volumes again for its
    // one node, at the same generation the same ones): a filter's ~500 nodes' volumes, held until the pod's next
    // filter, were most of what outlived young-generation GCs, and under overload brought a major GC every few seconds.
    if (data.whatIf || state.analysis) return SUCCESS;
    if (data.held || !data.podVolumesByNode.has(nodeInfo.name)) {
      if (data.held) data.podVolumesByNode.set(nodeInfo.name, found.podVolumes);
      const score = this.#scorer ? this.#score(found.podVolumes, this.#scorer) : undefined;
      if (data.held || score !== undefined) {
        this.decisions.remember(pod.metadata.uid, nodeInfo.name, generation, {
          podVolumes: data.held ? found.podVolumes : undefined,
          score,
        });
      }
    }
    return SUCCESS;
  }

  #findOptions(held: HeldVolumes | undefined, ordinal?: number): FindOptions {
    const options = this.#find;
    options.held = held;
    options.ordinal = ordinal;
    return options;
  }

  /**
   * Not in upstream (its VolumeBinding has no PreFilterExtensions): a nominated pod added to the node holds the PVs
   * its unbound claims would take there and the storage it would provision, against the pod being checked.
   */
  addPod(state: CycleState, pod: Pod, podToAdd: Pod, nodeInfo: NodeInfo): Status {
    const data = this.#state(state, pod);
    if (data.skip || !nodeInfo.node) return SUCCESS;
    const held = this.heldBy(podToAdd, nodeInfo.node, data.held);
    if (held !== data.held) state.write(STATE_KEY, { ...data, held } satisfies StateData);
    return SUCCESS;
  }

  /**
   * `held` plus the PVs the pod's unbound claims would take on the node and the storage it would provision there.
   * A pod whose volumes do not fit the node holds nothing there (its own problem, not the other pod's).
   */
  heldBy(pod: Pod, node: Node, held: HeldVolumes | undefined): HeldVolumes | undefined {
    if (!hasClaims(pod) || this.binder.podClaimsError(pod)) return held;
    let found: ReturnType<VolumeBinder['findPodVolumes']>;
    try {
      found = this.binder.findPodVolumes(pod, this.binder.getPodVolumeClaims(pod), node, this.#findOptions(held));
    } catch {
      return held;
    }
    const { staticBindings, dynamicProvisions } = found.podVolumes;
    if (found.reasons.length > 0 || staticBindings.length + dynamicProvisions.length === 0) return held;
    const pvs = new Set(held?.pvs);
    for (const b of staticBindings) pvs.add(b.pv.metadata.name);
    const capacity = new Map(held?.capacity);
    for (const p of dynamicProvisions) {
      if (p.nodeCapacity) {
        capacity.set(p.nodeCapacity, (capacity.get(p.nodeCapacity) ?? 0) + claimMatchInput(p.pvc).request);
      }
    }
    return { pvs, capacity };
  }

  /**
   * A scheduled pod's bound claims stay bound when it goes: removing it frees no PV. From here on the node is a
   * what-if, and filter's decisions about it are not remembered.
   */
  removePod(state: CycleState, pod: Pod, _podToRemove: Pod, _nodeInfo: NodeInfo): Status {
    const data = this.#state(state, pod);
    if (!data.skip && !data.whatIf) state.write(STATE_KEY, { ...data, whatIf: true } satisfies StateData);
    return SUCCESS;
  }

  /** The decision for a node: this cycle's, else a still-valid cached one, else computed from current state. */
  #decision(data: StateData, pod: Pod, nodeName: string): { podVolumes?: PodVolumes; status: Status } {
    const own = data.podVolumesByNode.get(nodeName);
    if (own) return { podVolumes: own, status: SUCCESS };
    const generation = this.binder.generation();
    const cached = this.decisions.get(pod.metadata.uid, nodeName, generation);
    if (cached) return { podVolumes: cached, status: SUCCESS };
    const node = this.binder.node(nodeName);
    if (!node) return { status: status('Error', `node "${nodeName}" not found`) };
    if (!data.claims) return { podVolumes: { staticBindings: [], dynamicProvisions: [] }, status: SUCCESS };
    try {
      const found = this.binder.findPodVolumes(pod, data.claims, node);
      if (found.reasons.length > 0) return { status: status('UnschedulableAndUnresolvable', ...found.reasons) };
      this.decisions.remember(pod.metadata.uid, nodeName, generation, {
        podVolumes: found.podVolumes,
        score: undefined,
      });
      return { podVolumes: found.podVolumes, status: SUCCESS };
    } catch (err) {
      return { status: status('Error', errorMessage(err)) };
    }
  }

  score(state: CycleState, pod: Pod, nodeInfo: NodeInfo): number {
    if (!this.#scorer) return 0;
    const data = this.#state(state, pod);
    if (data.skip) return 0;
    const own = data.podVolumesByNode.get(nodeInfo.name);
    if (own) return this.#score(own, this.#scorer);
    // Prioritize follows filter in kube-scheduler's one scheduling cycle, and upstream's Score reads what its Filter
    // decided in that cycle however the cluster changed since: so the pod's latest filter's decisions are read, at
    // whatever generation (a bind's watch events between the two moved it nearly every time in a burst, and prioritize
    // found every node's volumes again). The decision filter remembered carries the score (one kept for bind gets it
    // from the first prioritize that reads it). Read once per prioritize, not once per node.
    if (!data.decidedRead) {
      data.decided = this.decisions.latestForPod(pod.metadata.uid);
      data.decidedRead = true;
    }
    const cached = data.decided?.get(nodeInfo.name);
    if (cached?.score === undefined && cached?.podVolumes) cached.score = this.#score(cached.podVolumes, this.#scorer);
    if (cached?.score !== undefined) return cached.score;
    const { podVolumes } = this.#decision(data, pod, nodeInfo.name);
    return podVolumes ? this.#score(podVolumes, this.#scorer) : 0;
  }

  /** Upstream StorageCapacityScoring over the decided volumes, per storage class. */
  #score(podVolumes: PodVolumes, scorer: CapacityScorer): number {
    const bindings = podVolumes.staticBindings;
    if (bindings.length > 0) {
      // With static bindings only they count (upstream StorageCapacityScoring). Their PVs are nearly always of one
      // class: summed without a map (filter scores every node it passes).
      const className = bindings[0].pv.spec.storageClassName ?? '';
      let requested = 0;
      let capacity = 0;
      for (const b of bindings) {
        if ((b.pv.spec.storageClassName ?? '') !== className) return this.#scoreByClass(bindings, scorer);
        requested += claimMatchInput(b.pvc).request;
        capacity += pvCapacity(b.pv);
      }
      return scorer.oneClass(requested, capacity);
    }
    const classResources = new Map<string, StorageResource>();
    if (this.binder.capacityAccounting === 'joint') {
      // What filter checked: each capacity object once, with its in-flight provisions as already requested, so a
      // node is scored as full as joint accounting sees it.
      const own = new Set(podVolumes.dynamicProvisions.map((p) => claimKey(p.pvc)));
      const seen = new Set<CSIStorageCapacity>();
      for (const p of podVolumes.dynamicProvisions) {
        if (!p.nodeCapacity) continue;
        const first = !seen.has(p.nodeCapacity);
        seen.add(p.nodeCapacity);
        const inFlight = first ? this.binder.inFlight.bytesFor(p.nodeCapacity, own) : 0;
        const capacity = first ? (capacityBytes(p.nodeCapacity) ?? 0) : 0;
        addClassResource(
          classResources,
          p.pvc.spec.storageClassName ?? '',
          claimMatchInput(p.pvc).request + inFlight,
          capacity,
        );
      }
    } else {
      for (const p of podVolumes.dynamicProvisions) {
        if (!p.nodeCapacity) continue;
        addClassResource(
          classResources,
          p.pvc.spec.storageClassName ?? '',
          claimMatchInput(p.pvc).request,
          capacityBytes(p.nodeCapacity) ?? 0,
        );
      }
    }
    return scorer(classResources);
  }

  /** Static bindings of several classes: the mean of their classes' scores. */
  #scoreByClass(bindings: readonly BindingInfo[], scorer: CapacityScorer): number {
    const classResources = new Map<string, StorageResource>();
    for (const b of bindings) {
      addClassResource(
        classResources,
        b.pv.spec.storageClassName ?? '',
        claimMatchInput(b.pvc).request,
        pvCapacity(b.pv),
      );
    }
    return scorer(classResources);
  }

  reserve(state: CycleState, pod: Pod, nodeName: string): Status {
    const data = this.#state(state, pod);
    if (data.reservation) return SUCCESS; // this cycle already holds it
    if (data.skip) return SUCCESS; // no claims: nothing to assume (upstream allBound = true)
    this.expireStaleReservations();
    const uid = pod.metadata.uid;
    const existing = this.#reservations.get(uid);
    if (existing) {
      if (existing.nodeName !== nodeName) {
        return status('Error', `volumes of pod ${uid} are already reserved for node "${existing.nodeName}"`);
      }
      // A retried bind of the same pod to the same node shares the assumption instead of assuming twice.
      existing.holders++;
      data.reservation = existing;
      return SUCCESS;
    }
    const decision = this.#decision(data, pod, nodeName);
    if (!decision.podVolumes) return decision.status;
    let result: ReturnType<VolumeBinder['assumePodVolumes']>;
    try {
      result = this.binder.assumePodVolumes(pod, nodeName, decision.podVolumes);
    } catch (err) {
      return status('Error', errorMessage(err));
    }
    const reservation: Reservation = {
      podUID: uid,
      nodeName,
      allBound: result.allBound,
      assumed: result.assumed,
      holders: 1,
      settled: false,
      bound: false,
      reservedAt: this.#now(),
    };
    this.#reservations.add(reservation);
    data.reservation = reservation;
    return SUCCESS;
  }

  unreserve(state: CycleState, _pod: Pod, _nodeName: string): void {
    const data = state.read<StateData>(STATE_KEY);
    const r = data?.reservation;
    if (!data || !r) return;
    data.reservation = undefined;
    r.holders--;
    if (r.holders > 0) return;
    this.binder.revertAssumedPodVolumes(r.assumed);
    this.#reservations.release(r);
  }

  async preBind(state: CycleState, pod: Pod, nodeName: string, signal: AbortSignal): Promise<Status> {
    const data = this.#state(state, pod);
    const r = data.reservation;
    if (!r) return data.skip ? SUCCESS : status('Error', `no pod volumes found for node "${nodeName}"`);
    if (r.allBound || r.bound) {
      this.#reservations.release(r);
      // Bound before this bind (or by an earlier call of it): still read back before the Binding.
      const stranded = await this.binder.checkPodVolumesFromAPI(pod, nodeName);
      return stranded ? status('Error', `binding volumes: ${stranded}`) : SUCCESS;
    }
    r.binding ??= this.binder.bindPodVolumes(pod, nodeName, r.assumed, signal).finally(() => {
      r.settled = true;
    });
    try {
      await r.binding;
    } catch (err) {
      // unreserve (which the runner calls next) reverts and releases the reservation.
      return { ...status('Error', errorMessage(err)), cause: err };
    }
    r.bound = true;
    this.#reservations.release(r);
    this.decisions.forgetPod(r.podUID);
    return SUCCESS;
  }

  /**
   * Reverts reservations whose bind never came back (no unreserve, no preBind in progress) once they are older than
   * the bind timeout plus a minute: an assumption must not outlive the bind that made it. Runs lazily on reserve.
   */
  expireStaleReservations(): string[] {
    const ttl = (this.binder.bindTimeoutSeconds + 60) * 1000;
    return this.#reservations.expire(this.#now(), ttl).map((r) => {
      this.binder.revertAssumedPodVolumes(r.assumed);
      return r.podUID;
    });
  }

  /** Per claim: its PV, or the PVs considered on this node and why each was refused, and the provisioning verdict. */
  explain(state: CycleState, pod: Pod, nodeInfo: NodeInfo, limits: ExplainLimits): object | undefined {
    const data = this.#state(state, pod);
    if (data.skip || !data.claims || !nodeInfo.node) return undefined;
    try {
      const options = { held: data.held, maxVolumes: limits.maxVolumes };
      return { claims: this.binder.explainPodVolumes(pod, data.claims, nodeInfo.node, options) };
    } catch {
      return undefined; // an internal error: the verdict (Error) already says it
    }
  }

  /** Pod UIDs with volumes currently assumed: what the reserve/unreserve tests check. */
  reservedPods(): string[] {
    return this.#reservations.podUIDs();
  }
}
