// FindPodVolumes (upstream volumebinding/binder.go): per node, whether the pod's bound claims' PVs fit it, which
// static PVs its unbound claims would bind (findMatchingVolumes) and which would be provisioned
// (checkVolumeProvisions), with joint capacity accounting of the provisions in flight. Runs for every node of every
// filter: nothing here allocates per node what it can keep per pod.
import { SelectorError } from '../cluster/label-selector.ts';
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../cluster/types.ts';
import {
  BinderError,
  type BindingInfo,
  ERR_REASON_BIND_CONFLICT,
  ERR_REASON_NODE_CONFLICT,
  ERR_REASON_NOT_ENOUGH_SPACE,
  ERR_REASON_PV_NOT_EXIST,
  type FindExplainer,
  type FindOptions,
  type FindResult,
  type PodVolumes,
} from './binder.ts';
import type { PodVolumeClaims } from './claims.ts';
import { ANN_SELECTED_NODE } from './constants.ts';
import { pvForNode } from './csi-migration.ts';
import { explainScope } from './explain.ts';
import { pvNodeAffinityMatches } from './node-affinity.ts';
import { type CapacityAccountingMode, checkVolumeProvisions, type JointAccounting } from './provisioning.ts';
import {
  type ClaimMatchInput,
  claimKey,
  claimMatchInput,
  findMatchingVolume,
  type PVNames,
  type PVRefusal,
} from './pv-matching.ts';
import type { BinderSources } from './sources.ts';

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

export class PodVolumeFinder {
  readonly #sources: BinderSources;
  readonly capacityAccounting: CapacityAccountingMode;
  /** findMatchingVolumes' scratch list; its walk is synchronous and never re-entered. */
  readonly #chosen = new ChosenPVs();

  constructor(sources: BinderSources, capacityAccounting: CapacityAccountingMode) {
    this.#sources = sources;
    this.capacityAccounting = capacityAccounting;
  }

  /**
   * FindPodVolumes for one node. Throws BinderError for internal errors (never for a verdict). `options.ordinal`, the
   * node's NodeInfo.ordinal when known, lets free PVs be matched from the node's dense row (see FreePVRows).
   */
  findPodVolumes(_pod: Pod, claims: PodVolumeClaims, node: Node, options?: FindOptions): FindResult {
    const held = options?.held;
    const explain = options?.explain;
    // With an explainer every PV is looked at, never a node's dense row.
    const ordinal = explain ? undefined : options?.ordinal;
    const sources = this.#sources;
    let boundVolumesSatisfied = true;
    let boundPVsFound = true;
    const podVolumes: PodVolumes = { staticBindings: [], dynamicProvisions: [] };
    const labels = node.metadata.labels;

    if (claims.boundClaims.length > 0) {
      const csiNode = sources.csiNode(node.metadata.name);
      for (const pvc of claims.boundClaims) {
        const pv = sources.pvCache.get(pvc.spec.volumeName ?? '');
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
        if (this.capacityAccounting === 'joint' && unbound.jointAt !== sources.generation()) {
          unbound.joint = this.#jointAccounting(unbound.keys);
          unbound.jointAt = sources.generation();
        }
        const joint = this.capacityAccounting === 'joint' ? unbound.joint : undefined;
        check = checkVolumeProvisions(toProvision, labels, sources, {
          taken: held?.capacity,
          note: explain && ((v) => explain.provision(v)),
          joint,
          ordinal,
        });
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
    const inFlight = this.#sources.inFlight;
    for (const key of own) if (inFlight.has(key)) noOwnInFlight = false;
    return { inFlight: (c) => inFlight.bytesFor(c, own), noOwnInFlight };
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
    ordinal: number | undefined,
  ): boolean {
    // Only a pod with several claims can choose a PV twice; PVs held for nominated pods are never offered.
    const chosen = inputs.length > 1 || held ? this.#chosen.reset(held) : NONE_CHOSEN;
    let found = true;
    for (const input of inputs) {
      const pvc = input.pvc;
      let pv: PersistentVolume | undefined;
      try {
        pv = this.#sources.pvCache.findMatchingVolume(input, labels, chosen, ordinal);
      } catch (err) {
        if (err instanceof SelectorError) {
          throw new BinderError(`error creating internal label selector for claim: ${claimKey(pvc)}: ${err.message}`);
        }
        throw err;
      }
      if (explain) {
        // The same rules over the PVs that could be on the node, only to say why each other PV was passed over.
        const refused: [PersistentVolume, PVRefusal][] = [];
        const { examined, onOtherNodes } = explainScope(
          this.#sources.pvCache,
          this.#sources.generation(),
          input,
          labels,
          chosen,
        );
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
}
