// The scheduler volume binder (upstream volumebinding/binder.go): per node, which static PVs a pod's unbound claims
// would bind and which claims would be provisioned; then assume, write and wait for the PV controller.
// Reads go through the assume caches and small store-fed indexes, never through whole-cluster scans.

import { pino } from 'pino';
import { SelectorError } from '../cluster/label-selector.ts';
import type { ClusterStore } from '../cluster/store.ts';
import {
  type CSIDriver,
  type CSINode,
  type CSIStorageCapacity,
  DEFAULT_NAMESPACE,
  type Node,
  namespaceOf,
  objectKey,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
} from '../cluster/types.ts';
import { claimClass } from '../cluster/volume-annotations.ts';
import { type ClusterWriter, WriteError } from '../cluster/writer.ts';
import type { Log } from '../log.ts';
import { feedAssumeCaches, PVAssumeCache, PVCAssumeCache } from './assume-cache.ts';
import { type CapacityAccept, CapacityIndex } from './capacity-index.ts';
import type { CAPACITY_ROW_UNDECIDED } from './capacity-rows.ts';
import {
  ANN_SELECTED_VOLUME,
  claimHold,
  HOLD_SECONDS,
  heldForOtherVolume,
  ServedHolds,
  withHold,
  withoutHold,
} from './claim-hold.ts';
import { getPodVolumeClaims, isClaimFullyBound, type PodVolumeClaims, podClaimRefs, podClaimsError } from './claims.ts';
import {
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_BOUND_BY_CONTROLLER,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
} from './constants.ts';
import { pvForNode } from './csi-migration.ts';
import { explainScope } from './explain.ts';
import { InFlightProvisions } from './in-flight.ts';
import { NO_MATCHING_TERMS, pvNodeAffinityMatches } from './node-affinity.ts';
import {
  type CapacityAccountingMode,
  checkVolumeProvisions,
  type DynamicProvision,
  facts,
  type JointAccounting,
  nodeHasAccess,
  nodeHasAccessOf,
  type ProvisioningSources,
  type ProvisionVerdict,
} from './provisioning.ts';
import {
  bindVolumeToClaim,
  type ClaimMatchInput,
  claimKey,
  claimMatchInput,
  findMatchingVolume,
  isVolumeBoundToClaim,
  type PVNames,
  type PVRefusal,
} from './pv-matching.ts';

/** FindPodVolumes conflict reasons (volumebinding/binder.go), in the order they are reported. */
export const ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity";
export const ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind";
export const ERR_REASON_NOT_ENOUGH_SPACE = 'node(s) did not have enough free storage';
export const ERR_REASON_PV_NOT_EXIST = 'node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)';

export interface BindingInfo {
  pvc: PersistentVolumeClaim;
  pv: PersistentVolume;
}

export interface PodVolumes {
  staticBindings: BindingInfo[];
  dynamicProvisions: DynamicProvision[];
}

/**
 * What pods nominated to the node (of at least the pod's priority) would take there: their chosen PVs are not
 * offered, the storage they would provision is no longer free in the capacity object that admitted it.
 */
export interface HeldVolumes {
  pvs: ReadonlySet<string>;
  /** capacity object → bytes its nominated claims would take */
  capacity: ReadonlyMap<CSIStorageCapacity, number>;
}

export interface FindResult {
  podVolumes: PodVolumes;
  /** Conflict reasons in upstream order; empty when the node fits. */
  reasons: string[];
  /** Rejected for storage only because of joint accounting: upstream's per-claim check would have admitted it. */
  jointOnly?: boolean;
}

/**
 * Told what findPodVolumes decides for each claim on one node, in the order it decides (explain's detail). The filter
 * passes none; with one, static matching also says why each PV that could be on the node was passed over.
 */
export interface FindExplainer {
  /** A bound claim: its PV (undefined when missing) and whether the PV's node affinity holds on the node. */
  bound(pvc: PersistentVolumeClaim, pv: PersistentVolume | undefined, affinityMatches: boolean): void;
  /** An unbound claim whose provisioning already started for `selectedNode`. */
  selectedNode(pvc: PersistentVolumeClaim, selectedNode: string): void;
  /**
   * Static matching of one claim: the PV chosen (the filter's choice), the PVs that could be on the node passed over,
   * and how many PVs of the class have node affinity for other nodes only (not examined one by one).
   */
  matched(
    pvc: PersistentVolumeClaim,
    chosen: PersistentVolume | undefined,
    refused: [PersistentVolume, PVRefusal][],
    onOtherNodes: number,
  ): void;
  /** The provisioning check's verdict on one claim. */
  provision(verdict: ProvisionVerdict): void;
}

export interface VolumeBinderOptions {
  store: ClusterStore;
  writer: ClusterWriter;
  bindTimeoutSeconds: number;
  /** Default joint (the setting's default). */
  capacityAccounting?: CapacityAccountingMode;
  logger?: Log;
  /** The clock of claim holds and bind deadlines; default Date.now. */
  now?: () => number;
}

/** An internal failure while deciding: an error status, never a reason. */
export class BinderError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'BinderError';
  }
}

function rvNumber(obj: { metadata: { resourceVersion: string } }): number {
  const n = Number(obj.metadata.resourceVersion);
  return Number.isFinite(n) ? n : 0;
}

function labelsEqual(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b ?? {}).length) return false;
  return ka.every((k) => a![k] === b?.[k]);
}

const NONE_CHOSEN: PVNames = new Set();
/** A fitting node's reasons: none (shared, never written). */
const NO_REASONS: string[] = Object.freeze([]) as unknown as string[];

/** FindPodVolumes' reasons, in upstream's order; a fitting node allocates none. */
function conflictReasons(
  boundVolumesSatisfied: boolean,
  unboundVolumesSatisfied: boolean,
  sufficientStorage: boolean,
  boundPVsFound: boolean,
): string[] {
  if (boundVolumesSatisfied && unboundVolumesSatisfied && sufficientStorage && boundPVsFound) return NO_REASONS;
  const reasons: string[] = [];
  if (!boundVolumesSatisfied) reasons.push(ERR_REASON_NODE_CONFLICT);
  if (!unboundVolumesSatisfied) reasons.push(ERR_REASON_BIND_CONFLICT);
  if (!sufficientStorage) reasons.push(ERR_REASON_NOT_ENOUGH_SPACE);
  if (!boundPVsFound) reasons.push(ERR_REASON_PV_NOT_EXIST);
  return reasons;
}

/**
 * The PVs a pod's claims chose so far on one node, and those held for nominated pods: what the next claim may not
 * take. A pod has a few claims, so a short list beats a Set made for every node; the binder reuses one.
 */
class ChosenPVs implements PVNames {
  #held: ReadonlySet<string> | undefined;
  /** The PV objects chosen, compared by identity: the walk then never reads a candidate's or a chosen PV's name. */
  readonly #pvs: PersistentVolume[] = [];

  reset(held: ReadonlySet<string> | undefined): this {
    this.#held = held;
    this.#pvs.length = 0;
    return this;
  }

  add(pv: PersistentVolume): void {
    this.#pvs.push(pv);
  }

  get size(): number {
    return this.#pvs.length + (this.#held?.size ?? 0);
  }

  hasPV(pv: PersistentVolume): boolean {
    return this.#pvs.includes(pv) || this.#held?.has(pv.metadata.name) === true;
  }

  has(name: string): boolean {
    return this.#pvs.some((pv) => pv.metadata.name === name) || this.#held?.has(name) === true;
  }

  *[Symbol.iterator](): Iterator<string> {
    for (const pv of this.#pvs) yield pv.metadata.name;
    if (this.#held) yield* this.#held;
  }
}

/** Whether a capacity update keeps the nodes it reaches (else its in-flight claims are attributed anew). */
function sameTopology(a: CSIStorageCapacity, b: CSIStorageCapacity): boolean {
  return JSON.stringify(a.nodeTopology) === JSON.stringify(b.nodeTopology);
}

/**
 * The PV controller's setClaimProvisioner, written with selected-node: an external provisioner starts on a claim only
 * once it names it, and the controller, behind its queue and client limit, would add it in a write of its own first.
 * An in-tree provisioner (`kubernetes.io/...`) is left to the controller, which may name a CSI driver for it instead.
 */
function externalProvisioner(pvc: PersistentVolumeClaim, sc: StorageClass | undefined): Record<string, string> {
  const name = sc?.provisioner;
  if (!name || name.startsWith('kubernetes.io/') || pvc.metadata.annotations?.[ANN_STORAGE_PROVISIONER] === name) {
    return {};
  }
  return { [ANN_BETA_STORAGE_PROVISIONER]: name, [ANN_STORAGE_PROVISIONER]: name };
}

/** Waits for every write to settle (so that the caller knows which landed), then throws the first failure. */
async function allWritten(writes: Promise<void>[]): Promise<void> {
  const failed = (await Promise.allSettled(writes)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** A pod's unbound delay-binding claims, split once per classification rather than once per node. */
interface UnboundClaims {
  /** Claims whose provisioning already started (selected-node annotation), in claim order. */
  provisioning: { pvc: PersistentVolumeClaim; selectedNode: string }[];
  /** The others, as matching inputs, smallest request first (a stable sort: equal requests keep claim order). */
  toMatch: ClaimMatchInput[];
  /** Their keys: a pod's own claims are never in flight against itself. */
  keys: Set<string>;
  /** The joint check's view of the in-flight provisions, made once per classification and binder generation. */
  joint?: JointAccounting;
  jointAt?: number;
}

const unboundOf = new WeakMap<PodVolumeClaims, UnboundClaims>();

/** Depends on the claim objects only, which a PodVolumeClaims holds fixed: memoised per classification. */
function prepareUnbound(claims: PodVolumeClaims): UnboundClaims {
  let out = unboundOf.get(claims);
  if (!out) {
    out = { provisioning: [], toMatch: [], keys: new Set() };
    for (const pvc of claims.unboundClaimsDelayBinding) {
      out.keys.add(claimKey(pvc));
      const ann = pvc.metadata.annotations;
      if (ann && Object.hasOwn(ann, ANN_SELECTED_NODE)) {
        out.provisioning.push({ pvc, selectedNode: ann[ANN_SELECTED_NODE] });
      } else {
        out.toMatch.push(claimMatchInput(pvc));
      }
    }
    out.toMatch.sort((a, b) => a.request - b.request);
    unboundOf.set(claims, out);
  }
  return out;
}

export class VolumeBinder implements ProvisioningSources {
  readonly pvCache = new PVAssumeCache();
  /** findMatchingVolumes' scratch list; its walk is synchronous and never re-entered. */
  readonly #chosen = new ChosenPVs();
  readonly pvcCache = new PVCAssumeCache();
  readonly #store: ClusterStore;
  readonly #writer: ClusterWriter;
  readonly #logger: Log;
  readonly #now: () => number;
  bindTimeoutSeconds: number;
  readonly capacityAccounting: CapacityAccountingMode;
  /** Provisions the capacity objects do not show yet; kept in both modes (metrics), subtracted in joint mode. */
  readonly inFlight: InFlightProvisions;
  /** Nodes rejected for storage only because of joint accounting (filter verdicts), for the metrics. */
  jointOnlyRejections = 0;
  /** Bumped whenever anything a decision reads changes: cached decisions compare it. */
  #generation = 0;
  readonly #capacities = new CapacityIndex({
    reaches: (c, labels) => nodeHasAccess(labels, c),
    bytes: facts,
    owed: (c) => this.inFlight.bytesFor(c),
  });
  /** Binds waiting for the API to show their writes, by the objects they read (`Kind/key`). */
  readonly #waiters = new Map<string, Set<() => void>>();
  /** Every waiting bind, for the once-a-second check. */
  readonly #polled = new Set<() => void>();
  #poll: NodeJS.Timeout | undefined;
  readonly #unsubscribe: (() => void)[] = [];
  readonly #servedHolds = new ServedHolds({
    latest: (key) => this.pvcCache.getAPI(key),
    drop: (pvc) => this.#writer.bindClaimToVolume(pvc, pvc.spec.volumeName!, { [ANN_SELECTED_VOLUME]: null }),
    gaveUp: (err, key) => this.#logger.info({ err, pvc: key }, 'could not drop the hold of a bound claim; it stays'),
  });

  constructor(options: VolumeBinderOptions) {
    this.#store = options.store;
    this.#writer = options.writer;
    this.#logger = options.logger ?? pino({ level: 'silent' });
    this.#now = options.now ?? Date.now;
    this.bindTimeoutSeconds = options.bindTimeoutSeconds;
    this.capacityAccounting = options.capacityAccounting ?? 'joint';
    const store = options.store;
    this.inFlight = new InFlightProvisions({
      nodeLabels: (name) => {
        const node = this.node(name);
        return node ? (node.metadata.labels ?? {}) : undefined;
      },
      reachingCapacity: (className, labels) => this.#capacities.find(className, labels, nodeHasAccessOf, labels),
      owedChanged: (key) => this.#capacities.owedChanged(key),
    });
    this.pvCache.onChange((entry, previous) => {
      this.#generation++;
      this.#wake(`PersistentVolume/${entry.key}`);
      // A provisioned claim waits for the PV that names it, whatever that PV is called.
      for (const pv of [entry.api, entry.latest, previous]) {
        const ref = pv?.spec.claimRef;
        if (ref?.name)
          this.#wake(`PersistentVolumeClaim/${claimKey({ metadata: { namespace: ref.namespace, name: ref.name } })}`);
      }
    });
    this.pvcCache.onChange((entry, _previous, deleted) => {
      this.inFlight.claimChanged(entry.key, deleted ? undefined : entry.latest);
      this.#servedHolds.changed(entry.key);
      this.#generation++;
      this.#wake(`PersistentVolumeClaim/${entry.key}`);
    });
    for (const c of store.list('CSIStorageCapacity')) this.#capacities.upsert(c);
    this.#unsubscribe.push(feedAssumeCaches(store, this.pvCache, this.pvcCache));
    this.#unsubscribe.push(
      store.on('CSIStorageCapacity', (e) => {
        if (e.type === 'delete') this.#capacities.delete(e.obj);
        else this.#capacities.upsert(e.obj);
        if (e.type === 'delete') this.inFlight.capacityRemoved(e.obj);
        else if (e.type === 'add') this.inFlight.capacityAdded(e.obj);
        else if (e.old.storageClassName === e.obj.storageClassName && sameTopology(e.old, e.obj)) {
          this.inFlight.capacityRepublished(e.obj);
        } else {
          this.inFlight.capacityRemoved(e.old);
          this.inFlight.capacityAdded(e.obj);
        }
        this.#generation++; // no bind waits on capacity (checkBindings does not read it)
      }),
      store.on('StorageClass', () => this.#changed()),
      store.on('CSIDriver', () => this.#changed()),
      store.on('CSINode', (e) => {
        this.#generation++;
        this.#wake(`Node/${e.obj.metadata.name}`);
      }),
      store.on('Node', (e) => {
        if (e.type !== 'update' || !labelsEqual(e.old.metadata.labels, e.obj.metadata.labels)) {
          this.inFlight.nodeChanged(e.obj.metadata.name);
          this.#generation++;
        }
        this.#wake(`Node/${e.obj.metadata.name}`);
      }),
      store.on('Pod', (e) => {
        // A bind waits for its pod's deletion, and one that lost a claim for another bind's Binding of the pod.
        if (e.type === 'delete' || (e.type === 'update' && e.obj.spec.nodeName && !e.old.spec.nodeName)) {
          this.#wake(`Pod/${objectKey('Pod', e.obj)}`);
        }
      }),
    );
  }

  close(): void {
    for (const off of this.#unsubscribe.splice(0)) off();
  }

  generation(): number {
    return this.#generation;
  }

  // ProvisioningSources
  // The provisioning check asks for the same class and driver on every node; the last answer stands until the
  // generation moves (every StorageClass and CSIDriver event bumps it).
  #classMemo: { name: string; at: number; sc: StorageClass | undefined } = { name: '', at: -1, sc: undefined };
  #driverMemo: { name: string; at: number; driver: CSIDriver | undefined } = { name: '', at: -1, driver: undefined };

  storageClass(name: string): StorageClass | undefined {
    const memo = this.#classMemo;
    if (memo.at === this.#generation && memo.name === name) return memo.sc;
    const sc = this.#store.get('StorageClass', name);
    this.#classMemo = { name, at: this.#generation, sc };
    return sc;
  }

  csiDriver(name: string): CSIDriver | undefined {
    const memo = this.#driverMemo;
    if (memo.at === this.#generation && memo.name === name) return memo.driver;
    const driver = this.#store.get('CSIDriver', name);
    this.#driverMemo = { name, at: this.#generation, driver };
    return driver;
  }

  findCapacity<C>(
    className: string,
    nodeLabels: Readonly<Record<string, string>> | undefined,
    accept: CapacityAccept<C>,
    context: C,
  ): CSIStorageCapacity | undefined {
    return this.#capacities.find(className, nodeLabels, accept, context);
  }

  findCapacityForNode(
    className: string,
    nodeLabels: Readonly<Record<string, string>>,
    ordinal: number,
    size: number,
    joint: boolean,
    pod: ReadonlyMap<CSIStorageCapacity, number>,
  ): CSIStorageCapacity | undefined | typeof CAPACITY_ROW_UNDECIDED {
    return this.#capacities.findForNode(className, nodeLabels, ordinal, size, joint, pod);
  }

  node(name: string): Node | undefined {
    return this.#store.get('Node', name);
  }

  csiNode(nodeName: string): CSINode | undefined {
    return this.#store.get('CSINode', nodeName);
  }

  /** A claim of the pod's namespace, as the PVC assume cache holds it (assumptions included). */
  claim(namespace: string | undefined, name: string): PersistentVolumeClaim | undefined {
    return this.pvcCache.get(`${namespace || DEFAULT_NAMESPACE}/${name}`);
  }

  /** podHasPVCs' verdict: the reason no node can host the pod's claims, if any. */
  podClaimsError(pod: Pod): string | undefined {
    return podClaimsError(pod, (name) => this.claim(pod.metadata.namespace, name));
  }

  /** GetPodVolumeClaims. Throws ClaimError. */
  getPodVolumeClaims(pod: Pod): PodVolumeClaims {
    return getPodVolumeClaims(
      pod,
      (name) => this.claim(pod.metadata.namespace, name),
      (name) => this.storageClass(name),
    );
  }

  /**
   * FindPodVolumes for one node. Throws BinderError for internal errors (never for a verdict). `ordinal`, the node's
   * NodeInfo.ordinal when known, lets free PVs be matched from the node's dense row (see FreePVRows).
   */
  findPodVolumes(
    _pod: Pod,
    claims: PodVolumeClaims,
    node: Node,
    held?: HeldVolumes,
    explain?: FindExplainer,
    ordinal = -1,
  ): FindResult {
    let boundVolumesSatisfied = true;
    let boundPVsFound = true;
    const podVolumes: PodVolumes = { staticBindings: [], dynamicProvisions: [] };
    const labels = node.metadata.labels;

    if (claims.boundClaims.length > 0) {
      const csiNode = this.csiNode(node.metadata.name);
      for (const pvc of claims.boundClaims) {
        const pv = this.pvCache.get(pvc.spec.volumeName ?? '');
        if (!pv) {
          explain?.bound(pvc, undefined, false);
          boundPVsFound = false;
          break;
        }
        const matches = pvNodeAffinityMatches(pvForNode(pv, csiNode), labels);
        explain?.bound(pvc, pv, matches);
        if (!matches) {
          boundVolumesSatisfied = false;
          break;
        }
      }
    }

    if (claims.unboundClaimsDelayBinding.length === 0) {
      return { podVolumes, reasons: conflictReasons(boundVolumesSatisfied, true, true, boundPVsFound) };
    }
    const unbound = prepareUnbound(claims);
    const { provisioning, toMatch } = unbound;
    const toProvision: PersistentVolumeClaim[] = [];
    for (const { pvc, selectedNode } of provisioning) {
      explain?.selectedNode(pvc, selectedNode);
      if (selectedNode !== node.metadata.name) {
        // Fast path: provisioning already started for another node.
        return { podVolumes, reasons: conflictReasons(boundVolumesSatisfied, false, true, boundPVsFound) };
      }
      toProvision.push(pvc);
    }

    let unboundVolumesSatisfied = true;
    if (toMatch.length > 0) {
      unboundVolumesSatisfied = this.#findMatchingVolumes(
        toMatch,
        labels,
        held?.pvs,
        podVolumes.staticBindings,
        toProvision,
        explain,
        ordinal,
      );
    }
    let sufficientStorage = true;
    let jointOnly = false;
    if (toProvision.length > 0) {
      let check: ReturnType<typeof checkVolumeProvisions>;
      try {
        if (this.capacityAccounting === 'joint' && unbound.jointAt !== this.#generation) {
          unbound.joint = this.#jointAccounting(unbound.keys);
          unbound.jointAt = this.#generation;
        }
        const joint = this.capacityAccounting === 'joint' ? unbound.joint : undefined;
        check = explain
          ? checkVolumeProvisions(toProvision, labels, this, held?.capacity, (v) => explain.provision(v), joint)
          : checkVolumeProvisions(toProvision, labels, this, held?.capacity, undefined, joint, ordinal);
        jointOnly = check.jointOnly === true;
      } catch (err) {
        throw new BinderError((err as Error).message);
      }
      unboundVolumesSatisfied = check.satisfied;
      sufficientStorage = check.sufficientStorage;
      podVolumes.dynamicProvisions = check.provisions;
    }
    const reasons = conflictReasons(boundVolumesSatisfied, unboundVolumesSatisfied, sufficientStorage, boundPVsFound);
    return { podVolumes, reasons, jointOnly };
  }

  /** In-flight bytes per capacity object, the pod's own claims left out (re-checking a pod never counts it twice). */
  #jointAccounting(own: ReadonlySet<string>): JointAccounting {
    let noOwnInFlight = true;
    for (const key of own) if (this.inFlight.has(key)) noOwnInFlight = false;
    return { inFlight: (c) => this.inFlight.bytesFor(c, own), noOwnInFlight };
  }

  /**
   * findMatchingVolumes: smallest claims first (`inputs` come sorted), each PV chosen at most once per pod. Bindings
   * go to `bindings`, claims no PV satisfies to `unmatched`; true when every claim found a PV.
   */
  #findMatchingVolumes(
    inputs: readonly ClaimMatchInput[],
    labels: Record<string, string> | undefined,
    held: ReadonlySet<string> | undefined,
    bindings: BindingInfo[],
    unmatched: PersistentVolumeClaim[],
    explain: FindExplainer | undefined,
    ordinal: number,
  ): boolean {
    // Only a pod with several claims can choose a PV twice; PVs held for nominated pods are never offered.
    const chosen = inputs.length > 1 || held ? this.#chosen.reset(held) : NONE_CHOSEN;
    let found = true;
    for (const input of inputs) {
      const pvc = input.pvc;
      let pv: PersistentVolume | undefined;
      try {
        pv = this.pvCache.findMatchingVolume(input, labels, chosen, explain ? -1 : ordinal);
      } catch (err) {
        if (err instanceof SelectorError) {
          throw new BinderError(`error creating internal label selector for claim: ${claimKey(pvc)}: ${err.message}`);
        }
        throw err;
      }
      if (explain) {
        // The same rules over the PVs that could be on the node, only to say why each other PV was passed over.
        const refused: [PersistentVolume, PVRefusal][] = [];
        const { examined, onOtherNodes } = explainScope(this.pvCache, this.#generation, input, labels, chosen);
        findMatchingVolume(input, examined, labels, chosen, (p, why) =>
          refused.push([
            p,
            why === 'ChosenForAnotherClaim' && held?.has(p.metadata.name) ? 'HeldForNominatedPod' : why,
          ]),
        );
        explain.matched(pvc, pv, refused, onOtherNodes);
      }
      if (!pv) {
        unmatched.push(pvc);
        found = false;
        continue;
      }
      if (chosen !== NONE_CHOSEN) this.#chosen.add(pv);
      bindings.push({ pvc, pv });
    }
    return found;
  }

  /** arePodVolumesBound, through the PVC assume cache. */
  arePodVolumesBound(pod: Pod): boolean {
    for (const ref of podClaimRefs(pod)) {
      const pvc = this.claim(pod.metadata.namespace, ref.name);
      if (!pvc || !isClaimFullyBound(pvc)) return false;
    }
    return true;
  }

  /**
   * AssumePodVolumes: PVs prebound to their claims and provisioning claims annotated with the node, in the caches only.
   * Returns the assumed objects (what bind writes and revert restores), or allBound when there is nothing to do.
   * Refuses a PV that is (assumed) bound to another claim: two pods never book the same PV. Throws; reverts first.
   */
  assumePodVolumes(pod: Pod, nodeName: string, podVolumes: PodVolumes): { allBound: boolean; assumed: PodVolumes } {
    if (this.arePodVolumesBound(pod)) return { allBound: true, assumed: { staticBindings: [], dynamicProvisions: [] } };
    const assumed: PodVolumes = { staticBindings: [], dynamicProvisions: [] };
    try {
      for (const binding of podVolumes.staticBindings) {
        const latest = this.pvCache.get(binding.pv.metadata.name);
        if (latest?.spec.claimRef && !isVolumeBoundToClaim(latest, binding.pvc)) {
          const ref = latest.spec.claimRef;
          throw new BinderError(
            `persistentvolume "${binding.pv.metadata.name}" is already bound to claim "${ref.namespace}/${ref.name}"`,
          );
        }
        const { pv, dirty } = bindVolumeToClaim(binding.pv, binding.pvc);
        if (dirty) this.pvCache.assume(pv);
        assumed.staticBindings.push({ pv, pvc: binding.pvc });
      }
      for (const provision of podVolumes.dynamicProvisions) {
        const annotations = provision.pvc.metadata.annotations;
        const pvc: PersistentVolumeClaim = {
          ...provision.pvc,
          metadata: {
            ...provision.pvc.metadata,
            annotations: {
              ...annotations,
              [ANN_SELECTED_NODE]: nodeName,
              ...externalProvisioner(provision.pvc, this.storageClass(claimClass(provision.pvc))),
            },
          },
        };
        this.pvcCache.assume(pvc);
        assumed.dynamicProvisions.push({ ...provision, pvc });
      }
    } catch (err) {
      this.revertAssumedPodVolumes(assumed);
      throw err;
    }
    return { allBound: false, assumed };
  }

  /** RevertAssumedPodVolumes: back to the API objects; idempotent. */
  revertAssumedPodVolumes(podVolumes: PodVolumes): void {
    for (const b of podVolumes.staticBindings) this.pvCache.restore(b.pv.metadata.name);
    for (const p of podVolumes.dynamicProvisions) this.pvcCache.restore(claimKey(p.pvc));
  }

  /**
   * BindPodVolumes: hold the claims, write the assumed PVs, then the annotated PVCs (resourceVersion preconditions),
   * restoring what was not written on the first failure; then wait, driven by store events, until every claim is
   * bound, and read the pod's claims back from the API. When that fails, the PVs it wrote whose claims another writer
   * bound are unbound again. A claim lost to another writer (409) is not yet a failure: see #afterLostClaim. One
   * deadline, bindTimeoutSeconds from the start, bounds every wait of the bind.
   */
  async bindPodVolumes(pod: Pod, nodeName: string, podVolumes: PodVolumes, signal?: AbortSignal): Promise<void> {
    const deadline = this.#now() + this.bindTimeoutSeconds * 1000;
    try {
      await this.#bindAndWait(pod, nodeName, podVolumes, deadline, signal);
    } catch (err) {
      const cause = err instanceof BinderError ? err.cause : err;
      if (!(cause instanceof WriteError) || cause.code !== 409) throw err;
      await this.#afterLostClaim(pod, nodeName, err as Error, deadline, signal);
    }
  }

  async #bindAndWait(
    pod: Pod,
    nodeName: string,
    podVolumes: PodVolumes,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const written = await this.bindAPIUpdate(podVolumes);
    const { staticBindings, dynamicProvisions } = written;
    // What checkBindings reads: the node (and its CSINode), the pod, each binding's PV and claim, each provisioned
    // claim (a PV naming it wakes its key too).
    const reads = [
      `Node/${nodeName}`,
      `Pod/${objectKey('Pod', pod)}`,
      ...staticBindings.flatMap((b) => [
        `PersistentVolume/${b.pv.metadata.name}`,
        `PersistentVolumeClaim/${claimKey(b.pvc)}`,
      ]),
      ...dynamicProvisions.map((p) => `PersistentVolumeClaim/${claimKey(p.pvc)}`),
    ];
    try {
      if (dynamicProvisions.length > 0) {
        // Once the external-provisioner's PVs name the claims, their halves are written as a static binding's are.
        await this.#waitUntil(
          () => this.checkBindings(pod, nodeName, staticBindings, dynamicProvisions, true),
          reads,
          deadline,
          signal,
        );
        await allWritten(
          dynamicProvisions.map(async (p) => {
            p.pvc = await this.#bindProvisionedClaim(p.pvc);
          }),
        );
      }
      await this.#waitUntil(
        () => this.checkBindings(pod, nodeName, staticBindings, dynamicProvisions),
        reads,
        deadline,
        signal,
      );
      const halves = staticBindings.filter((b) => b.pvc.spec.volumeName === b.pv.metadata.name);
      const stranded = await this.checkPodVolumesFromAPI(
        pod,
        nodeName,
        new Map(halves.map((b) => [b.pvc.metadata.name, b])),
      );
      if (stranded) throw new Error(stranded);
    } catch (err) {
      await this.#unbindLost(written.staticBindings);
      throw new BinderError(`binding volumes: ${(err as Error).message}`, err);
    }
  }

  /**
   * After this bind lost a claim of the pod to another writer (a 409): most often another bind of the same pod,
   * kube-scheduler's retry on another replica, which may bind the pod to this node any moment. Its outcome decides,
   * so the answer waits for facts that no later write can make false, read from the API:
   * - the pod bound (to any node): rethrown, and bind answers from the pod;
   * - every claim bound to a PV that fits the node: resolves, and the Binding goes ahead (upstream's rule for bound
   *   claims; a Binding the other bind made first is read back as success);
   * - a claim bound, prebound or held for a volume the node cannot use, or unbound and held by no one: no bind of
   *   the pod can land on the node before that changes, which takes another bind's writes: rethrown with why;
   * - otherwise a bind may still bind a claim for this node (held for a PV that fits it, being provisioned, prebound
   *   to one): wait until one of those claims or the pod changes (or a hold expires), then look again.
   * The deadline and the signal bound the wait; past them the error stands as it was.
   */
  async #afterLostClaim(
    pod: Pod,
    nodeName: string,
    lost: Error,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const podKey = objectKey('Pod', pod);
    for (;;) {
      const live = await this.#writer.getPod(namespaceOf(pod), pod.metadata.name);
      if (!live || live.metadata.uid !== pod.metadata.uid || live.spec.nodeName) throw lost;
      const claims = await this.#claimsForNode(pod, nodeName);
      if (claims.state === 'bound') {
        this.#logger.info({ pod: podKey, node: nodeName }, 'another bind bound the claims for this node meanwhile');
        return;
      }
      if (claims.state === 'refused') throw new BinderError(`${lost.message}; ${claims.why}`, lost);
      const read = claims.inFlight;
      const changed = () =>
        !!this.#store.get('Pod', podKey)?.spec.nodeName ||
        read.some((c) => {
          const watched = this.pvcCache.getAPI(claimKey(c));
          const hold = claimHold(c);
          return !watched || rvNumber(watched) > rvNumber(c) || (!!hold && this.#now() - hold.at > HOLD_SECONDS * 1000);
        });
      try {
        await this.#waitUntil(
          changed,
          [`Pod/${podKey}`, ...read.map((c) => `PersistentVolumeClaim/${claimKey(c)}`)],
          deadline,
          signal,
        );
      } catch (err) {
        throw new BinderError(
          `${lost.message}; ${(err as Error).message} waiting for another bind of the claims`,
          lost,
        );
      }
    }
  }

  /**
   * The pod's claims, read from the API now, against binding the pod to `nodeName` (#afterLostClaim): all bound to
   * PVs that fit it; one that keeps the pod off it (why); or those another bind may still bind for it.
   */
  async #claimsForNode(
    pod: Pod,
    nodeName: string,
  ): Promise<
    { state: 'bound' } | { state: 'refused'; why: string } | { state: 'in-flight'; inFlight: PersistentVolumeClaim[] }
  > {
    const node = this.#store.get('Node', nodeName);
    if (!node) return { state: 'refused', why: `node "${nodeName}" not found` };
    const csiNode = this.csiNode(nodeName);
    const fits = (pv: PersistentVolume | undefined) =>
      !!pv && pvNodeAffinityMatches(pvForNode(pv, csiNode), node.metadata.labels);
    const namespace = namespaceOf(pod);
    const now = this.#now();
    const inFlight: PersistentVolumeClaim[] = [];
    for (const { name } of podClaimRefs(pod)) {
      const key = `${namespace}/${name}`;
      const pvc = await this.#writer.getPersistentVolumeClaim(namespace, name);
      if (!pvc) return { state: 'refused', why: `persistentvolumeclaim "${key}" not found` };
      const refused = (how: string, volume: string) => ({
        state: 'refused' as const,
        why: `claim "${key}" is ${how} volume "${volume}", which does not fit node "${nodeName}"`,
      });
      const volumeName = pvc.spec.volumeName;
      if (volumeName) {
        const pv = await this.#writer.getPersistentVolume(volumeName);
        if (!pv || !isVolumeBoundToClaim(pv, pvc) || !fits(pv)) return refused('bound to', volumeName);
        continue;
      }
      const held = heldForOtherVolume(pvc, '', now, (n) => this.pvCache.getAPI(n));
      const prebound = this.pvCache.apiVolumeClaimedBy(key, pvc.metadata.uid);
      if (held) {
        if (!fits(this.pvCache.getAPI(held))) return refused('held for', held);
      } else if (prebound) {
        if (!fits(prebound)) return refused('prebound to', prebound.metadata.name);
      } else if (!pvc.metadata.annotations?.[ANN_SELECTED_NODE]) {
        return { state: 'refused', why: `claim "${key}" is not bound, and no other bind holds it` };
      }
      inFlight.push(pvc);
    }
    return inFlight.length > 0 ? { state: 'in-flight', inFlight } : { state: 'bound' };
  }

  /**
   * bindAPIUpdate: holds each static binding's claim for its PV (see claim-hold.ts), writes each assumed PV, then
   * each static binding's claim half (see #bindClaim), then each annotated PVC, with their resourceVersion as
   * precondition. On the first failure what was not written is restored, the holds whose PV is known not written are
   * released, and the write error is thrown. Returns what the API stored.
   */
  async bindAPIUpdate(podVolumes: PodVolumes): Promise<PodVolumes> {
    const bindings = podVolumes.staticBindings.map((b) => ({ ...b }));
    const provisions = podVolumes.dynamicProvisions.map((p) => ({ ...p }));
    const holds: (PersistentVolumeClaim | undefined)[] = [];
    /** Per binding: its PV written, not written, or 'maybe' (an outcome unknown: the PV may be prebound). */
    const pvWritten: (boolean | 'maybe')[] = bindings.map(() => false);
    const pvcWritten = provisions.map(() => false);
    try {
      // A stage writes its object of every claim at once, and starts once the one before succeeded for all: every
      // hold before any PV (a writer that loses one claim of the pod has written no PV yet), every PV before any
      // claim half.
      await allWritten(
        bindings.map(async (b, i) => {
          holds[i] = await this.#holdClaim(b);
        }),
      );
      await allWritten(
        bindings.map(async (b, i) => {
          this.#logger.debug({ pv: b.pv.metadata.name, pvc: claimKey(b.pvc) }, 'binding PV to PVC');
          try {
            b.pv = await this.#writePV(b);
            pvWritten[i] = true;
          } catch (err) {
            if (err instanceof WriteError && err.uncertain) pvWritten[i] = 'maybe';
            throw err;
          }
        }),
      );
      await allWritten(
        bindings.map(async (b, i) => {
          b.pvc = await this.#bindClaim(b, holds[i]);
        }),
      );
      await allWritten(
        provisions.map(async (p, i) => {
          p.pvc = await this.#writer.updatePersistentVolumeClaim(p.pvc);
          pvcWritten[i] = true;
        }),
      );
    } catch (err) {
      for (const [i, b] of bindings.entries()) if (pvWritten[i] !== true) this.pvCache.restore(b.pv.metadata.name);
      for (const [i, p] of provisions.entries()) if (!pvcWritten[i]) this.pvcCache.restore(claimKey(p.pvc));
      // A PV write whose outcome is unknown may have prebound its PV: its claim keeps the hold (until it expires), so
      // that no other bind gives the claim a second PV meanwhile.
      await this.#releaseHolds(holds.filter((_, i) => pvWritten[i] === false));
      // A claim half that lost to another writer leaves PVs this bind wrote naming a claim bound elsewhere.
      await this.#unbindLost(bindings.filter((_, i) => pvWritten[i] === true));
      throw err;
    }
    return { staticBindings: bindings, dynamicProvisions: provisions };
  }

  /**
   * Writes the claim's hold for the binding's PV, conditional on the version whose hold was checked. Returns the
   * claim as written (or read back holding it), or undefined when nothing needed writing (already held for this PV in
   * the watch's view, or bound to it). Throws a 409 WriteError when another writer holds or bound the claim: this
   * bind steps back.
   */
  async #holdClaim(b: BindingInfo): Promise<PersistentVolumeClaim | undefined> {
    const pvName = b.pv.metadata.name;
    const key = claimKey(b.pvc);
    const current = this.pvcCache.getAPI(key) ?? b.pvc;
    const now = this.#now();
    const taken = this.#claimTaken(current, pvName, now);
    if (taken) throw new WriteError(409, 'Conflict', taken);
    if (current.spec.volumeName || claimHold(current)?.pv === pvName) return undefined;
    try {
      return await this.#writer.updatePersistentVolumeClaim(withHold(current, pvName, now));
    } catch (err) {
      if (!(err instanceof WriteError) || err.code !== 409) throw err;
      // Someone wrote the claim since our watch saw it: read it, and go on only if it is held for (or bound to) our PV.
      const live = await this.#writer.getPersistentVolumeClaim(namespaceOf(current), current.metadata.name);
      if (!live) throw err;
      const liveTaken = this.#claimTaken(live, pvName, now);
      if (liveTaken) throw new WriteError(409, 'Conflict', liveTaken);
      if (live.spec.volumeName === pvName) return undefined;
      // Held for our PV: this bind's own write whose reply was lost, or another bind of the same claim and PV.
      if (claimHold(live)?.pv === pvName) return live;
      throw err;
    }
  }

  /** Why the claim is not this bind's to take for `pvName`: bound to another PV or held for one. */
  #claimTaken(pvc: PersistentVolumeClaim, pvName: string, now: number): string | undefined {
    const key = claimKey(pvc);
    const bound = pvc.spec.volumeName;
    if (bound) return bound === pvName ? undefined : `claim "${key}" is bound to volume "${bound}", not "${pvName}"`;
    const other = heldForOtherVolume(pvc, pvName, now, (name) => this.pvCache.getAPI(name));
    return other && `claim "${key}" is held for volume "${other}" by another bind`;
  }

  /**
   * Writes the PV's claimRef. A 409 is read back: the PV already prebound to the same claim (another bind of the
   * claim wrote it) is taken as written; anything else fails the bind.
   */
  async #writePV(b: BindingInfo): Promise<PersistentVolume> {
    try {
      return await this.#writer.updatePersistentVolume(b.pv);
    } catch (err) {
      if (!(err instanceof WriteError) || err.code !== 409) throw err;
      const live = await this.#writer.getPersistentVolume(b.pv.metadata.name);
      if (live?.spec.claimRef?.uid && isVolumeBoundToClaim(live, b.pvc)) return live;
      throw err;
    }
  }

  /**
   * The claim's half of a static binding, written once its PV names it: spec.volumeName and bound-by-controller, as
   * the PV controller's bindClaimToVolume would write them, leaving it only the two Bound phases to set (upstream
   * leaves it the claim too, and its PreBind waits for all three). volumeName can be set only once, so it is the
   * binding's record and the hold, having served, is dropped. bind-completed stays the controller's to write: on a
   * claim carrying it, a controller whose PV informer lags (a PV just recreated under the same name) would see the
   * PV's old claimant and mark the claim Lost; without it, such a controller only retries.
   * The controller races this write (our PV write told it the claim's PV): a 409 or an unknown outcome is read back;
   * a claim bound to this PV is the binding done (its hold goes once the controller has marked it Bound: ServedHolds),
   * one bound or held elsewhere fails the bind, one changed otherwise (its status) is written again.
   */
  async #bindClaim(b: BindingInfo, held: PersistentVolumeClaim | undefined): Promise<PersistentVolumeClaim> {
    const pvName = b.pv.metadata.name;
    let current = held ?? this.pvcCache.getAPI(claimKey(b.pvc)) ?? b.pvc;
    for (let attempt = 1; ; attempt++) {
      const existing = current.metadata.annotations ?? {};
      if (current.spec.volumeName === pvName) {
        if (Object.hasOwn(existing, ANN_SELECTED_VOLUME)) this.#servedHolds.add(claimKey(current));
        return current;
      }
      const taken = this.#claimTaken(current, pvName, this.#now());
      if (taken) throw new WriteError(409, 'Conflict', taken);
      const annotations: Record<string, string | null> = {};
      if (!Object.hasOwn(existing, ANN_BOUND_BY_CONTROLLER)) annotations[ANN_BOUND_BY_CONTROLLER] = 'yes';
      if (Object.hasOwn(existing, ANN_SELECTED_VOLUME)) annotations[ANN_SELECTED_VOLUME] = null;
      try {
        return await this.#writer.bindClaimToVolume(current, pvName, annotations);
      } catch (err) {
        if (!(err instanceof WriteError) || !(err.code === 409 || err.uncertain) || attempt === 3) throw err;
        const live = await this.#writer.getPersistentVolumeClaim(namespaceOf(current), current.metadata.name);
        if (!live) throw err;
        current = live;
      }
    }
  }

  /** A provisioned claim's half, once the provisioner's PV names it; the claim unchanged when the controller bound it. */
  async #bindProvisionedClaim(written: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
    const key = claimKey(written);
    const pvc = this.pvcCache.getAPI(key) ?? written;
    if (pvc.spec.volumeName) return pvc;
    const pv = this.pvCache.apiVolumeClaimedBy(key, pvc.metadata.uid);
    return pv ? this.#bindClaim({ pvc, pv }, undefined) : pvc;
  }

  /** Releases holds this bind wrote (best effort: a hold it cannot release expires). */
  async #releaseHolds(holds: readonly (PersistentVolumeClaim | undefined)[]): Promise<void> {
    for (const held of holds) {
      if (!held) continue;
      try {
        await this.#writer.updatePersistentVolumeClaim(withoutHold(held));
      } catch (err) {
        this.#logger.info({ err, pvc: claimKey(held) }, 'could not release the claim hold; it expires');
      }
    }
  }

  /**
   * After a failed bind: each PV it wrote whose claim (read from the API) is bound to another PV is unbound, as the
   * PV controller would unbind it (the PV carries bound-by-controller). A PV whose claim is still unbound stays
   * prebound, as upstream leaves it: the PV controller binds the claim to it and the pod's retry goes where it is.
   */
  async #unbindLost(bindings: readonly BindingInfo[]): Promise<void> {
    for (const b of bindings) {
      try {
        const [pv, pvc] = await Promise.all([
          this.#writer.getPersistentVolume(b.pv.metadata.name),
          this.#writer.getPersistentVolumeClaim(namespaceOf(b.pvc), b.pvc.metadata.name),
        ]);
        if (!pv || !pvc?.spec.volumeName || pvc.spec.volumeName === pv.metadata.name) continue;
        if (pv.spec.claimRef?.uid !== pvc.metadata.uid) continue;
        await this.#writer.unbindPersistentVolume(pv);
        this.#logger.info({ pv: pv.metadata.name, pvc: claimKey(pvc) }, 'unbound a PV whose claim was bound elsewhere');
      } catch (err) {
        // The PV controller unbinds it too (bound-by-controller, claim bound elsewhere).
        this.#logger.info({ err, pv: b.pv.metadata.name }, 'could not unbind the PV; the PV controller will');
      }
    }
  }

  /**
   * The last check before the pod's Binding, on the API's objects read now rather than on this process's decisions
   * or watch: every claim of the pod is bound to a PV that is bound back to it and whose node affinity the node
   * satisfies, or is being provisioned for this node. Returns why not, or undefined.
   * `written`: the claims (by name) whose binding this bind wrote, both halves, with the API's answers to those
   * writes: already read from the API, and for good (a claim's volumeName never changes once set), so not read again.
   */
  async checkPodVolumesFromAPI(
    pod: Pod,
    nodeName: string,
    written: ReadonlyMap<string, BindingInfo> = new Map(),
  ): Promise<string | undefined> {
    const node = this.#store.get('Node', nodeName);
    if (!node) return `node "${nodeName}" not found`;
    const csiNode = this.csiNode(nodeName);
    const namespace = namespaceOf(pod);
    const problems = await Promise.all(
      podClaimRefs(pod).map(async ({ name }) => {
        const known = written.get(name);
        const pvc = known?.pvc ?? (await this.#writer.getPersistentVolumeClaim(namespace, name));
        if (!pvc) return `persistentvolumeclaim "${namespace}/${name}" not found`;
        const volumeName = pvc.spec.volumeName;
        if (!volumeName) {
          if (pvc.metadata.annotations?.[ANN_SELECTED_NODE] === nodeName) return undefined;
          return `claim "${namespace}/${name}" is not bound`;
        }
        const pv = known?.pv ?? (await this.#writer.getPersistentVolume(volumeName));
        if (!pv) return `claim "${namespace}/${name}" is bound to a missing volume "${volumeName}"`;
        // Its claimRef names this claim (a UID, when set, must be the claim's: a PV the PV controller bound has one).
        if (!isVolumeBoundToClaim(pv, pvc)) {
          return `volume "${volumeName}" is not bound to claim "${namespace}/${name}"`;
        }
        if (!pvNodeAffinityMatches(pvForNode(pv, csiNode), node.metadata.labels)) {
          return `pv "${volumeName}" node affinity doesn't match node "${nodeName}": ${NO_MATCHING_TERMS}`;
        }
        return undefined;
      }),
    );
    return problems.find((p) => p !== undefined);
  }

  /**
   * Resolves when check() is true, rejects when it throws, on timeout, or on abort. Re-checks when one of `reads`
   * changes (`Kind/key`: the objects check() reads), and every second whatever changed, as upstream polls: a missed
   * key costs a second, never a hang. Waking only the binds that read a change keeps a burst linear: waking every
   * bind in flight on every PV and claim event was 8 % of a delegated burst's CPU.
   */
  #waitUntil(
    check: () => boolean,
    reads: readonly string[],
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (err?: Error) => {
        if (settled) return;
        settled = true;
        for (const key of reads) {
          const set = this.#waiters.get(key);
          set?.delete(onChange);
          if (set?.size === 0) this.#waiters.delete(key);
        }
        this.#polled.delete(onChange);
        if (this.#polled.size === 0) clearInterval(this.#poll);
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const onChange = () => {
        if (settled) return;
        try {
          if (check()) finish();
        } catch (err) {
          finish(err as Error);
        }
      };
      const onAbort = () => finish(new Error('context canceled'));
      if (signal?.aborted) return onAbort();
      onChange();
      if (settled) return;
      for (const key of reads) {
        const set = this.#waiters.get(key) ?? new Set();
        this.#waiters.set(key, set);
        set.add(onChange);
      }
      if (this.#polled.size === 0) {
        this.#poll = setInterval(() => this.#wakeAll(), 1000);
        this.#poll.unref();
      }
      this.#polled.add(onChange);
      signal?.addEventListener('abort', onAbort, { once: true });
      timer = setTimeout(() => finish(new Error('context deadline exceeded')), Math.max(0, deadline - this.#now()));
    });
  }

  /**
   * checkBindings, on API objects: true when all bound, false to keep waiting; throws when binding must be retried.
   * `untilProvisioned`: a claim to provision counts once a PV names it, before the PV controller binds it.
   */
  checkBindings(
    pod: Pod,
    nodeName: string,
    bindings: readonly BindingInfo[],
    provisions: readonly DynamicProvision[],
    untilProvisioned = false,
  ): boolean {
    const node = this.#store.get('Node', nodeName);
    if (!node) throw new Error(`failed to get node "${nodeName}": node "${nodeName}" not found`);
    const csiNode = this.csiNode(nodeName);
    const podKey = objectKey('Pod', pod);
    if (!this.#store.get('Pod', podKey)) {
      throw new Error(`pod does not exist any more: pods "${pod.metadata.name}" not found`);
    }
    const labels = node.metadata.labels;
    for (const b of bindings) {
      const name = b.pv.metadata.name;
      const watchedPV = this.pvCache.getAPI(name);
      if (!watchedPV) throw new Error(`failed to check binding: could not find v1.PersistentVolume "${name}"`);
      const watchedPVC = this.pvcCache.getAPI(claimKey(b.pvc));
      if (!watchedPVC)
        throw new Error(`failed to check binding: could not find v1.PersistentVolumeClaim "${claimKey(b.pvc)}"`);
      // When this bind wrote both halves (#bindClaim), the API's answers to its writes are as good as their watch
      // events, which a burst delays by seconds; otherwise wait for the watch to deliver our PV write.
      const claimWritten = b.pvc.spec.volumeName === name;
      const pv = claimWritten && rvNumber(b.pv) > rvNumber(watchedPV) ? b.pv : watchedPV;
      const pvc = claimWritten && rvNumber(b.pvc) > rvNumber(watchedPVC) ? b.pvc : watchedPVC;
      if (rvNumber(b.pv) > rvNumber(pv)) return false;
      // Another writer's PV won the claim (not upstream's check: upstream assumes it is the only writer).
      if (pvc.spec.volumeName && pvc.spec.volumeName !== name) {
        const why = `claim "${claimKey(pvc)}" was bound to volume "${pvc.spec.volumeName}", not "${name}"`;
        throw new WriteError(409, 'Conflict', why);
      }
      if (!pvNodeAffinityMatches(pvForNode(pv, csiNode), labels)) {
        throw new Error(`pv "${name}" node affinity doesn't match node "${nodeName}": ${NO_MATCHING_TERMS}`);
      }
      if (!pv.spec.claimRef?.uid) throw new Error(`ClaimRef got reset for pv "${name}"`);
      if (!isVolumeBoundToClaim(pv, pvc)) throw new Error(`pv "${name}" was bound to another claim`);
      // When this bind wrote the claim's half (#bindClaim), the claim's volumeName can never change again: only the
      // controller's Bound phases remain. Otherwise upstream's rule: wait for the controller's bind-completed.
      if (rvNumber(b.pvc) > rvNumber(pvc)) return false;
      if (claimWritten ? pvc.spec.volumeName !== name : !isClaimFullyBound(pvc)) return false;
    }
    for (const { pvc: claim } of provisions) {
      const key = claimKey(claim);
      const pvc = this.pvcCache.getAPI(key);
      if (!pvc) throw new Error(`failed to check provisioning pvc: could not find v1.PersistentVolumeClaim "${key}"`);
      if (rvNumber(claim) > rvNumber(pvc)) return false;
      const ann = pvc.metadata.annotations;
      if (!ann) throw new Error(`selectedNode annotation reset for PVC "${pvc.metadata.name}"`);
      if ((ann[ANN_SELECTED_NODE] ?? '') !== nodeName) {
        // The provisioner removes the annotation to ask the scheduler to retry.
        throw new Error(`provisioning failed for PVC "${pvc.metadata.name}"`);
      }
      // The external-provisioner's PV names the claim (by uid) before the PV controller binds it.
      const volumeName =
        pvc.spec.volumeName ||
        (untilProvisioned ? this.pvCache.apiVolumeClaimedBy(key, pvc.metadata.uid)?.metadata.name : '');
      if (volumeName) {
        const pv = this.pvCache.getAPI(volumeName);
        if (!pv) return false; // not delivered yet
        if (!pvNodeAffinityMatches(pvForNode(pv, csiNode), labels)) {
          throw new Error(
            `pv "${pv.metadata.name}" node affinity doesn't match node "${nodeName}": ${NO_MATCHING_TERMS}`,
          );
        }
        if (untilProvisioned) continue;
      }
      // As for a static binding: a claim half this bind wrote is the binding done; else upstream's bind-completed.
      const halfWritten = claim.spec.volumeName;
      if (halfWritten ? pvc.spec.volumeName !== halfWritten : !isClaimFullyBound(pvc)) return false;
    }
    return true;
  }

  /** A change any bind may read (a StorageClass, a CSIDriver): every waiting bind checks again. */
  #changed(): void {
    this.#generation++;
    this.#wakeAll();
  }

  #wake(key: string): void {
    const set = this.#waiters.get(key);
    if (set) for (const waiter of [...set]) waiter();
  }

  #wakeAll(): void {
    for (const waiter of [...this.#polled]) waiter();
  }
}
