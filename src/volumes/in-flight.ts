// Provisions the capacity objects do not show yet (joint capacity accounting, see docs/design.md "Capacity that never
// over-commits"). external-provisioner republishes a CSIStorageCapacity about once a minute, so between two versions
// every volume provisioned meanwhile is still counted as free. A claim enters here when it carries
// volume.kubernetes.io/selected-node and is not bound (our own assumed provisions included: the assume cache holds
// their annotation); it stays once bound, as the PV provisioned since the capacity's last version, and leaves when a
// newer version of its capacity object arrives (or the claim goes, or loses the annotation: provisioning gave up).
// A claim first seen already bound was provisioned before we watched: the capacity we hold already shows it.
// Kept up to date from events, so a lookup is one map read per capacity object.

import type { CSIStorageCapacity, PersistentVolumeClaim } from '../cluster/types.ts';
import { ANN_SELECTED_NODE } from '../cluster/volume-annotations.ts';
import { claimClass, claimMatchInput } from './pv-matching.ts';

export interface InFlightClaim {
  readonly key: string;
  readonly nodeName: string;
  readonly className: string;
  /** The claim's storage request, in bytes. */
  readonly bytes: number;
  /** Bound since we saw it provisioning: its PV appeared after the capacity object's version we hold. */
  bound: boolean;
  /** namespace/name of the capacity object it is counted against; undefined while no capacity reaches the node. */
  capacityKey?: string;
}

export interface InFlightSources {
  /** The labels of a node, undefined for a node we do not know (its claims count against nothing yet). */
  nodeLabels(nodeName: string): Readonly<Record<string, string>> | undefined | null;
  /** The capacity object of the class that reaches the node (the first, in the capacity index's scan order). */
  reachingCapacity(className: string, nodeLabels: Readonly<Record<string, string>>): CSIStorageCapacity | undefined;
  /** What the capacity object is owed changed (the binder's dense capacity rows keep it). */
  owedChanged?(capacityKey: string): void;
}

const keyOf = new WeakMap<CSIStorageCapacity, string>();

/** namespace/name, memoised per object (the joint check asks for every capacity it considers). */
export function capacityKeyOf(c: CSIStorageCapacity): string {
  let key = keyOf.get(c);
  if (key === undefined) {
    key = `${c.metadata.namespace ?? ''}/${c.metadata.name}`;
    keyOf.set(c, key);
  }
  return key;
}

interface Owed {
  bytes: number;
  claims: Set<InFlightClaim>;
}

export class InFlightProvisions {
  readonly #sources: InFlightSources;
  readonly #claims = new Map<string, InFlightClaim>();
  readonly #byCapacity = new Map<string, Owed>();
  /** Claims no capacity object reaches (yet): a capacity arriving later may. */
  readonly #unattributed = new Set<InFlightClaim>();

  constructor(sources: InFlightSources) {
    this.#sources = sources;
  }

  /** The claim's latest version (assumed or from the API), or undefined when it was deleted. */
  claimChanged(key: string, pvc: PersistentVolumeClaim | undefined): void {
    const existing = this.#claims.get(key);
    const ann = pvc?.metadata.annotations;
    const nodeName = ann && Object.hasOwn(ann, ANN_SELECTED_NODE) ? ann[ANN_SELECTED_NODE] : '';
    if (!pvc || nodeName === '') {
      if (existing) this.#forget(existing);
      return;
    }
    const bound = (pvc.spec.volumeName ?? '') !== '';
    if (existing && existing.nodeName === nodeName) {
      existing.bound = bound;
      return;
    }
    if (existing) this.#forget(existing);
    if (bound) return; // provisioned before we saw it: already in the published capacity
    const claim: InFlightClaim = {
      key,
      nodeName,
      className: claimClass(pvc),
      bytes: claimMatchInput(pvc).request,
      bound: false,
    };
    this.#claims.set(key, claim);
    this.#attribute(claim);
  }

  /**
   * A new version of a capacity object: what its provisioned (bound) claims took is in it now. Unbound claims stay:
   * their volumes may not exist yet.
   */
  capacityRepublished(capacity: CSIStorageCapacity): void {
    const owed = this.#byCapacity.get(capacityKeyOf(capacity));
    if (!owed) return;
    for (const claim of [...owed.claims]) if (claim.bound) this.#forget(claim);
  }

  /**
   * A capacity object came: it is last in scan order, so only claims no capacity reached yet can be counted
   * against it.
   */
  capacityAdded(capacity: CSIStorageCapacity): void {
    for (const claim of [...this.#unattributed]) {
      if (claim.className === capacity.storageClassName) this.#attribute(claim);
    }
  }

  /** A capacity object went (or changed the nodes it reaches): its claims are counted against what reaches them now. */
  capacityRemoved(capacity: CSIStorageCapacity): void {
    const owed = this.#byCapacity.get(capacityKeyOf(capacity));
    if (owed) for (const claim of [...owed.claims]) this.#attribute(claim);
  }

  /** A node came or its labels changed: its claims may reach other capacity objects. */
  nodeChanged(nodeName: string): void {
    for (const claim of this.#claims.values()) if (claim.nodeName === nodeName) this.#attribute(claim);
  }

  /** Bytes in flight against the capacity object, leaving out the claims `except` names (the pod's own). */
  bytesFor(capacity: CSIStorageCapacity, except?: ReadonlySet<string>): number {
    if (this.#byCapacity.size === 0) return 0;
    const owed = this.#byCapacity.get(capacityKeyOf(capacity));
    if (!owed) return 0;
    let bytes = owed.bytes;
    if (except) {
      for (const key of except) {
        const claim = this.#claims.get(key);
        if (claim && owed.claims.has(claim)) bytes -= claim.bytes;
      }
    }
    return bytes;
  }

  /** The claims counted against the capacity object, by key. */
  claimsFor(capacity: CSIStorageCapacity): InFlightClaim[] {
    const owed = this.#byCapacity.get(capacityKeyOf(capacity));
    return owed ? [...owed.claims].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) : [];
  }

  /** Bytes in flight per node and storage class (attributed to a capacity object or not), for the metrics. */
  byNodeAndClass(): { nodeName: string; className: string; bytes: number }[] {
    const sums = new Map<string, { nodeName: string; className: string; bytes: number }>();
    for (const c of this.#claims.values()) {
      const k = `${c.nodeName}\0${c.className}`;
      const row = sums.get(k) ?? { nodeName: c.nodeName, className: c.className, bytes: 0 };
      row.bytes += c.bytes;
      sums.set(k, row);
    }
    return [...sums.values()];
  }

  get size(): number {
    return this.#claims.size;
  }

  /** Whether the claim (namespace/name) is in flight. */
  has(key: string): boolean {
    return this.#claims.has(key);
  }

  #attribute(claim: InFlightClaim): void {
    this.#detach(claim);
    const labels = this.#sources.nodeLabels(claim.nodeName);
    const capacity = labels ? this.#sources.reachingCapacity(claim.className, labels) : undefined;
    if (!capacity) {
      this.#unattributed.add(claim);
      return;
    }
    this.#unattributed.delete(claim);
    claim.capacityKey = capacityKeyOf(capacity);
    let owed = this.#byCapacity.get(claim.capacityKey);
    if (!owed) {
      owed = { bytes: 0, claims: new Set() };
      this.#byCapacity.set(claim.capacityKey, owed);
    }
    owed.claims.add(claim);
    owed.bytes += claim.bytes;
    this.#sources.owedChanged?.(claim.capacityKey);
  }

  #detach(claim: InFlightClaim): void {
    const key = claim.capacityKey;
    if (key === undefined) return;
    claim.capacityKey = undefined;
    const owed = this.#byCapacity.get(key);
    if (!owed?.claims.delete(claim)) return;
    owed.bytes -= claim.bytes;
    if (owed.claims.size === 0) this.#byCapacity.delete(key);
    this.#sources.owedChanged?.(key);
  }

  #forget(claim: InFlightClaim): void {
    this.#detach(claim);
    this.#unattributed.delete(claim);
    this.#claims.delete(claim.key);
  }
}
