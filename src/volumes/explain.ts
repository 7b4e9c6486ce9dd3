// Explain's volume detail for one node: what findPodVolumes decided for each of the pod's claims, told by the binder
// itself through its FindExplainer hook (the same code the filter runs), put into words for operators.
import type { CSIStorageCapacity, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../cluster/types.ts';
import type { FindExplainer, HeldVolumes, VolumeBinder } from './binder.ts';
import type { PodVolumeClaims } from './claims.ts';
import {
  type CapacityAccountingMode,
  type CapacityArithmetic,
  nodeHasAccess,
  type ProvisionVerdict,
} from './provisioning.ts';
import { claimClass, claimKey, type PVRefusal, pvClass } from './pv-matching.ts';

export interface RefusedVolume {
  name: string;
  refusal: PVRefusal;
  message: string;
}

export interface CapacityView {
  namespace: string;
  name: string;
  capacity: string | null;
  maximumVolumeSize: string | null;
}

export interface ProvisioningView {
  storageClass: string;
  provisioner: string;
  verdict: ProvisionVerdict['verdict'];
  /** Whether the class's allowedTopologies admit the node (true when it has none); null when not reached. */
  allowedTopologies: boolean | null;
  /** The CSIStorageCapacity that admitted the claim. */
  capacity?: CapacityView;
  /** When no capacity admitted it: those of the class reaching the node, with their sizes. */
  capacitiesReachingNode?: CapacityView[];
  /** The capacity check's arithmetic on the admitting capacity, else the first reaching the node (bytes). */
  capacityArithmetic?: CapacityArithmeticView;
}

/**
 * free = published - nominated - inFlight - podBefore; joint accounting admits the claim when requested <= free (and
 * <= maximumVolumeSize when set). Upstream's check reads only maximumVolumeSize, else published, minus nominated.
 */
export interface CapacityArithmeticView {
  accounting: CapacityAccountingMode;
  capacity: CapacityView;
  published: number | null;
  maximumVolumeSize: number | null;
  nominated: number;
  inFlight: number;
  /** The claims in flight against it (joint accounting): unbound with selected-node, or bound since its last version. */
  inFlightClaims: { claim: string; selectedNode: string; bytes: number; bound: boolean }[];
  /** The pod's earlier claims admitted on it. */
  podBefore: number;
  requested: number;
  /** What is left for this claim; null when the capacity publishes no `capacity`. */
  free: number | null;
}

export interface ClaimExplanation {
  claim: string;
  /** bound: has a PV; selectedNode: provisioning started; static: matched against PVs; then maybe provisioning. */
  phase: 'Bound' | 'SelectedNode' | 'Unbound';
  volume?: { name: string; found: boolean; nodeAffinityMatches: boolean };
  selectedNode?: string;
  /** The PV the filter would bind this claim to on this node. */
  chosenVolume?: string;
  refusedVolumes?: RefusedVolume[];
  /** PVs passed over beyond the cap on listed volumes. */
  refusedVolumesOmitted?: number;
  provisioning?: ProvisioningView;
}

function capacityView(c: CSIStorageCapacity): CapacityView {
  return {
    namespace: c.metadata.namespace ?? '',
    name: c.metadata.name,
    capacity: c.capacity === undefined ? null : String(c.capacity),
    maximumVolumeSize: c.maximumVolumeSize === undefined ? null : String(c.maximumVolumeSize),
  };
}

function modes(list: readonly string[] | undefined): string {
  return `[${(list ?? []).join(',')}]`;
}

/** Why the scan passed over `pv` for `pvc`, in words. */
export function refusalMessage(
  refusal: PVRefusal,
  pv: PersistentVolume,
  pvc: PersistentVolumeClaim,
  assumed: boolean,
): string {
  switch (refusal) {
    case 'ChosenForAnotherClaim':
      return 'already chosen for another claim of this pod';
    case 'HeldForNominatedPod':
      return 'held back for a pod nominated to a node (preemption)';
    case 'ClaimedByAnotherClaim': {
      const ref = pv.spec.claimRef!;
      const who = `${ref.namespace ?? ''}/${ref.name}`;
      return assumed ? `held back for claim ${who} by a bind in flight` : `claimed by ${who}`;
    }
    case 'TooSmall':
      return `capacity ${pv.spec.capacity?.storage ?? 0} is less than the ${pvc.spec.resources?.requests?.storage ?? 0} requested`;
    case 'VolumeModeMismatch':
      return `volumeMode ${pv.spec.volumeMode ?? 'Filesystem'}, the claim wants ${pvc.spec.volumeMode ?? 'Filesystem'}`;
    case 'VolumeAttributesClassMismatch':
      return `volumeAttributesClassName "${pv.spec.volumeAttributesClassName ?? ''}", the claim wants "${pvc.spec.volumeAttributesClassName ?? ''}"`;
    case 'BeingDeleted':
      return 'being deleted';
    case 'PreBoundNodeAffinityMismatch':
      return "pre-bound to this claim, but its node affinity does not match the node's labels";
    case 'NotAvailable':
      return `phase ${pv.status?.phase ?? '""'}, not Available`;
    case 'SelectorMismatch':
      return "labels do not match the claim's selector";
    case 'StorageClassMismatch':
      return `storage class "${pvClass(pv)}", the claim wants "${claimClass(pvc)}"`;
    case 'NodeAffinityMismatch':
      return "node affinity does not match the node's labels";
    case 'AccessModesMismatch':
      return `access modes ${modes(pv.spec.accessModes)} do not include every one of ${modes(pvc.spec.accessModes)}`;
  }
}

/** Collects findPodVolumes' decisions for one node into ClaimExplanations, listing at most `maxVolumes` PVs each. */
class Collector implements FindExplainer {
  readonly claims = new Map<string, ClaimExplanation>();
  readonly #binder: VolumeBinder;
  readonly #node: Node;
  readonly #maxVolumes: number;
  /** The pod's own claims: never in flight against itself (the check leaves them out too). */
  readonly #ownClaims: ReadonlySet<string>;

  constructor(binder: VolumeBinder, node: Node, maxVolumes: number, ownClaims: ReadonlySet<string>) {
    this.#binder = binder;
    this.#node = node;
    this.#maxVolumes = maxVolumes;
    this.#ownClaims = ownClaims;
  }

  #entry(pvc: PersistentVolumeClaim, phase: ClaimExplanation['phase']): ClaimExplanation {
    const key = claimKey(pvc);
    let entry = this.claims.get(key);
    if (!entry) {
      entry = { claim: key, phase };
      this.claims.set(key, entry);
    }
    return entry;
  }

  bound(pvc: PersistentVolumeClaim, pv: PersistentVolume | undefined, affinityMatches: boolean): void {
    this.#entry(pvc, 'Bound').volume = {
      name: pvc.spec.volumeName ?? '',
      found: pv !== undefined,
      nodeAffinityMatches: affinityMatches,
    };
  }

  selectedNode(pvc: PersistentVolumeClaim, selectedNode: string): void {
    this.#entry(pvc, 'SelectedNode').selectedNode = selectedNode;
  }

  matched(
    pvc: PersistentVolumeClaim,
    chosen: PersistentVolume | undefined,
    refused: [PersistentVolume, PVRefusal][],
  ): void {
    const entry = this.#entry(pvc, 'Unbound');
    if (chosen) entry.chosenVolume = chosen.metadata.name;
    // In upstream's scan order (informer order of the class), cut at the cap.
    const listed = refused.slice(0, this.#maxVolumes);
    entry.refusedVolumes = listed.map(([pv, refusal]) => ({
      name: pv.metadata.name,
      refusal,
      message: refusalMessage(refusal, pv, pvc, this.#binder.pvCache.isAssumed(pv.metadata.name)),
    }));
    if (refused.length > listed.length) entry.refusedVolumesOmitted = refused.length - listed.length;
  }

  #arithmetic(a: CapacityArithmetic): CapacityArithmeticView {
    const inFlightClaims =
      a.accounting === 'joint'
        ? this.#binder.inFlight
            .claimsFor(a.capacity)
            .filter((c) => !this.#ownClaims.has(c.key))
            .map((c) => ({ claim: c.key, selectedNode: c.nodeName, bytes: c.bytes, bound: c.bound }))
        : [];
    return {
      accounting: a.accounting,
      capacity: capacityView(a.capacity),
      published: a.published,
      maximumVolumeSize: a.maximumVolumeSize,
      nominated: a.nominated,
      inFlight: a.inFlight,
      inFlightClaims,
      podBefore: a.podBefore,
      requested: a.requested,
      free: a.published === null ? null : a.published - a.nominated - a.inFlight - a.podBefore,
    };
  }

  provision(v: ProvisionVerdict): void {
    const entry = this.#entry(v.pvc, 'Unbound');
    const view: ProvisioningView = {
      storageClass: v.storageClass.metadata.name,
      provisioner: v.storageClass.provisioner ?? '',
      verdict: v.verdict,
      allowedTopologies: v.verdict === 'NoProvisioner' ? null : v.verdict !== 'AllowedTopologiesMismatch',
    };
    if (v.capacity) view.capacity = capacityView(v.capacity);
    if (v.arithmetic) view.capacityArithmetic = this.#arithmetic(v.arithmetic);
    if (v.verdict === 'InsufficientCapacity') {
      const labels = this.#node.metadata.labels;
      const reaching: CSIStorageCapacity[] = [];
      this.#binder.findCapacity(v.storageClass.metadata.name, labels, (c) => {
        if (nodeHasAccess(labels, c)) reaching.push(c);
        return false; // visit them all
      });
      view.capacitiesReachingNode = reaching.map(capacityView);
    }
    entry.provisioning = view;
  }
}

/**
 * findPodVolumes for one node with an explainer: per claim, its PV or the PVs considered and why each was refused,
 * and the provisioning verdict. Claims findPodVolumes never reached (it stops at the first failure) are not listed.
 */
export function explainPodVolumes(
  binder: VolumeBinder,
  pod: Pod,
  claims: PodVolumeClaims,
  node: Node,
  held: HeldVolumes | undefined,
  maxVolumes: number,
): ClaimExplanation[] {
  const own = new Set(claims.unboundClaimsDelayBinding.map(claimKey));
  const collector = new Collector(binder, node, maxVolumes, own);
  binder.findPodVolumes(pod, claims, node, held, collector);
  return [...collector.claims.values()];
}
