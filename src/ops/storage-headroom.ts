// The storage view (storage.ts) kept current from the store's events, for the readers that ask often: the metrics on
// every scrape, the pending report after binds. An event only marks its object dirty (the watch path pays a Set.add);
// a reader folds what changed since the last read into per-row totals, so a view costs the changes plus its rows, not
// a pass over every PV (65-170 ms at 5,000 nodes and 50,000 PVs, during which no verb is answered). A node coming,
// going or relabelled re-places only what its hostname placed, the capacities that select by labels, and the PVs of the
// affinities (a CSI driver's own keys) that look at nodes with one of its labels: an affinity's place is computed once
// for all its PVs, and they move only when it changed.
// storageView stays the definition: tests compare the two on random clusters as objects change.

import type { ClusterStore, StoreEvent } from '../cluster/store.ts';
import type { CSIStorageCapacity, Node, PersistentVolume, PersistentVolumeClaim } from '../cluster/types.ts';
import { objectKey } from '../cluster/types.ts';
import { claimClass, pvClass } from '../cluster/volume-annotations.ts';
import { LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE } from '../cluster/well-known-labels.ts';
import { pvCapacity, requestedStorage } from '../volumes/pv-matching.ts';
import {
  affinityOf,
  affinityPlace,
  byPlace,
  capacityPlace,
  emptyRow,
  NodeLookup,
  type Place,
  pvPlaceByKeys,
  quantity,
  SIZE_BUCKETS,
  type StorageRow,
  type StorageView,
  type VolumeState,
  volumeState,
} from './storage.ts';

/**
 * What one PV or CSIStorageCapacity adds to its row, remembered so that its next version can take it back. A class,
 * not an object literal, though it has no behaviour: a class has a map of its own, while a literal's map hangs off
 * V8's shared root for objects of up to four properties. When ajv filled that root at start (see src/http/app.ts),
 * every share was born in dictionary mode: 450 B, not 48 (25 MB at 5,000 nodes).
 */
class Share {
  readonly row: string;
  /** The hostnames whose nodes placed it (see #byHostname). */
  readonly hostnames: readonly string[];
  readonly bytes: number;
  /** A PV's state; undefined for a capacity. */
  readonly state: VolumeState | undefined;
  /** A capacity's largest provisionable volume; undefined for a PV. */
  readonly largest: number | undefined;
  /** A PV placed through the nodes its affinity selects: that affinity (see #affinities). */
  readonly affinity: string | undefined;

  constructor(
    row: string,
    hostnames: readonly string[],
    bytes: number,
    state?: VolumeState,
    largest?: number,
    affinity?: string,
  ) {
    this.row = row;
    this.hostnames = hostnames;
    this.bytes = bytes;
    this.state = state;
    this.largest = largest;
    this.affinity = affinity;
  }
}

/** The place of one affinity, shared by its PVs (their keys), which move with it. */
class Affinity {
  place: Place;
  readonly volumes = new Set<string>();

  constructor(place: Place) {
    this.place = place;
  }
}

/** A row's totals, with the sizes behind its two maxima (a PV leaving must not leave a stale largest). */
interface Totals {
  /** Its key in #rows, the one string every share of the row keeps. */
  key: string;
  row: StorageRow;
  freeBySize: Map<number, number>;
  provisionableBySize: Map<number, number>;
}

type Claimed = { storageClass: string; bytes: number };

const NO_HOSTNAMES: readonly string[] = Object.freeze([]);

const headrooms = new WeakMap<ClusterStore, StorageHeadroom>();

/** The store's headroom, subscribed on first use (what happened before is read in full on the first view). */
export function storageHeadroom(store: ClusterStore): StorageHeadroom {
  let h = headrooms.get(store);
  if (!h) {
    h = new StorageHeadroom(store);
    headrooms.set(store, h);
  }
  return h;
}

export class StorageHeadroom {
  readonly #store: ClusterStore;
  readonly #dirtyVolumes = new Set<string>();
  readonly #dirtyCapacities = new Set<string>();
  readonly #dirtyClaims = new Set<string>();
  readonly #dirtyAffinities = new Set<string>();
  /** Nothing read yet: the first view reads everything. */
  #replaceAll = true;
  /** PVs and capacities (`Kind/key`) placed by the node of a hostname: that node coming, going or relabelled moves them. */
  readonly #byHostname = new Map<string, Set<string>>();
  /** The one-hostname list the shares of a hostname keep (see #hostnames), while #byHostname has that hostname. */
  readonly #singleHostnames = new Map<string, readonly string[]>();
  readonly #volumes = new Map<string, Share>();
  readonly #capacities = new Map<string, Share>();
  /** Capacities whose nodeTopology selects by labels other than hostname and zone: any label change may move them. */
  readonly #bySelector = new Set<string>();
  readonly #claims = new Map<string, Claimed>();
  /** The affinities PVs are placed by through the nodes they select, by affinity (Place.affinity). */
  readonly #affinities = new Map<string, Affinity>();
  /** The affinities by the labels (`key=value`) whose nodes they look at: a node carrying one may move them. */
  readonly #affinitiesByLabel = new Map<string, Set<string>>();
  /** The affinities that look at every node. */
  readonly #affinitiesBySelector = new Set<string>();
  readonly #rows = new Map<string, Totals>();
  readonly #waiting = new Map<string, Claimed & { count: number }>();

  constructor(store: ClusterStore) {
    this.#store = store;
    store.on('PersistentVolume', (e) => this.#dirtyVolumes.add(objectKey('PersistentVolume', e.obj)));
    store.on('CSIStorageCapacity', (e) => this.#dirtyCapacities.add(objectKey('CSIStorageCapacity', e.obj)));
    store.on('PersistentVolumeClaim', (e) => this.#dirtyClaims.add(objectKey('PersistentVolumeClaim', e.obj)));
    store.on('Node', (e) => {
      if (e.type === 'update' && e.old.metadata.labels === e.obj.metadata.labels) return;
      for (const key of this.#bySelector) this.#dirtyCapacities.add(key);
      if (this.#affinities.size > 0) this.#nodeChanged(e.type === 'update' ? [e.old, e.obj] : [e.obj]);
      if (e.type === 'update' && !movesPlaces(e)) return;
      for (const n of e.type === 'update' ? [e.old, e.obj] : [e.obj]) {
        for (const placed of this.#byHostname.get(n.metadata.labels?.[LABEL_HOSTNAME] ?? n.metadata.name) ?? []) {
          const at = placed.indexOf('/');
          const key = placed.slice(at + 1);
          if (placed.slice(0, at) === 'PersistentVolume') this.#dirtyVolumes.add(key);
          else this.#dirtyCapacities.add(key);
        }
      }
    });
  }

  /** The view as storageView(store) would give it now (not split by node). */
  view(): StorageView {
    if (this.#replaceAll) this.#rebuild();
    else this.#fold();
    const rows: StorageRow[] = [];
    for (const t of this.#rows.values()) {
      t.row.largestFreeBytes = largest(t.freeBySize);
      t.row.largestProvisionableBytes = largest(t.provisionableBySize);
      rows.push(structuredClone(t.row));
    }
    const waiting = [...this.#waiting.values()].map((w) => ({ ...w }));
    return { rows: rows.sort(byPlace), claimsWaiting: waiting.sort(byPlace) };
  }

  /** A node came, went or was relabelled: the affinities that looked at it, or may now, are placed again. */
  #nodeChanged(nodes: Node[]): void {
    for (const a of this.#affinitiesBySelector) this.#dirtyAffinities.add(a);
    if (this.#affinitiesByLabel.size === 0) return;
    for (const n of nodes)
      for (const [key, value] of Object.entries(n.metadata.labels ?? {}))
        for (const a of this.#affinitiesByLabel.get(`${key}=${value}`) ?? []) this.#dirtyAffinities.add(a);
  }

  #rebuild(): void {
    this.#replaceAll = false;
    for (const set of [this.#dirtyVolumes, this.#dirtyCapacities, this.#dirtyClaims, this.#dirtyAffinities])
      set.clear();
    for (const map of [this.#volumes, this.#capacities, this.#claims, this.#rows, this.#waiting, this.#byHostname])
      map.clear();
    this.#singleHostnames.clear();
    this.#bySelector.clear();
    this.#affinities.clear();
    this.#affinitiesByLabel.clear();
    this.#affinitiesBySelector.clear();
    const nodes = new NodeLookup(this.#store);
    for (const pv of this.#store.list('PersistentVolume')) this.#addVolume(pv, nodes);
    for (const c of this.#store.list('CSIStorageCapacity')) this.#addCapacity(c, nodes);
    for (const pvc of this.#store.list('PersistentVolumeClaim')) this.#addClaim(pvc);
  }

  #fold(): void {
    if (this.#dirtyVolumes.size + this.#dirtyCapacities.size + this.#dirtyAffinities.size > 0) {
      const nodes = new NodeLookup(this.#store);
      // An affinity whose place changed moves its PVs; one placed where it was moves none.
      for (const affinity of this.#dirtyAffinities) {
        const a = this.#affinities.get(affinity);
        if (!a) continue;
        const place = affinityPlace(affinity, { nodeSelectorTerms: JSON.parse(affinity) }, nodes);
        if (place.zone !== a.place.zone || place.node !== a.place.node)
          for (const key of a.volumes) this.#dirtyVolumes.add(key);
        a.place = place;
      }
      this.#dirtyAffinities.clear();
      for (const key of this.#dirtyVolumes) {
        this.#take(this.#volumes, 'PersistentVolume', key);
        const pv = this.#store.get('PersistentVolume', key);
        if (pv) this.#addVolume(pv, nodes);
      }
      for (const key of this.#dirtyCapacities) {
        this.#take(this.#capacities, 'CSIStorageCapacity', key);
        const c = this.#store.get('CSIStorageCapacity', key);
        if (c) this.#addCapacity(c, nodes);
        else this.#bySelector.delete(key);
      }
      this.#dirtyVolumes.clear();
      this.#dirtyCapacities.clear();
    }
    for (const key of this.#dirtyClaims) {
      const was = this.#claims.get(key);
      if (was) {
        this.#claims.delete(key);
        const w = this.#waiting.get(was.storageClass)!;
        w.count--;
        w.bytes -= was.bytes;
        if (w.count === 0) this.#waiting.delete(was.storageClass);
      }
      const pvc = this.#store.get('PersistentVolumeClaim', key);
      if (pvc) this.#addClaim(pvc);
    }
    this.#dirtyClaims.clear();
  }

  #totals(storageClass: string, place: Place): Totals {
    const key = `${storageClass}\0${place.zone}`;
    let t = this.#rows.get(key);
    if (!t) {
      t = { key, row: emptyRow(storageClass, place, false), freeBySize: new Map(), provisionableBySize: new Map() };
      this.#rows.set(key, t);
    }
    return t;
  }

  /** One list per hostname for the shares a single node placed (nearly all of them), not one per share. */
  #hostnames(place: Place): readonly string[] {
    const hostnames = place.hostnames ?? NO_HOSTNAMES;
    if (hostnames.length !== 1) return hostnames.length === 0 ? NO_HOSTNAMES : hostnames;
    let held = this.#singleHostnames.get(hostnames[0]);
    if (!held) {
      held = Object.freeze([hostnames[0]]);
      this.#singleHostnames.set(hostnames[0], held);
    }
    return held;
  }

  #addVolume(pv: PersistentVolume, nodes: NodeLookup): void {
    const key = objectKey('PersistentVolume', pv);
    const place = pvPlaceByKeys(pv, nodes.hosts) ?? this.#affinity(pv, key, nodes);
    const t = this.#totals(pvClass(pv), place);
    const state = volumeState(pv);
    const bytes = pvCapacity(pv);
    t.row.volumes[state].count++;
    t.row.volumes[state].bytes += bytes;
    if (state === 'available') {
      t.row.freeSizes[sizeLabel(bytes)]++;
      count(t.freeBySize, bytes, 1);
    }
    const hostnames = this.#hostnames(place);
    this.#index(`PersistentVolume/${key}`, hostnames, 1);
    this.#volumes.set(key, new Share(t.key, hostnames, bytes, state, undefined, place.affinity));
  }

  /** The place of a PV's affinity, which it joins (placed by the nodes it selects on its first PV). */
  #affinity(pv: PersistentVolume, key: string, nodes: NodeLookup): Place {
    const affinity = affinityOf(pv);
    let a = this.#affinities.get(affinity);
    if (!a) {
      a = new Affinity(affinityPlace(affinity, pv.spec.nodeAffinity!.required!, nodes));
      this.#affinities.set(affinity, a);
      for (const label of a.place.labels ?? []) {
        const set = this.#affinitiesByLabel.get(label) ?? new Set<string>();
        this.#affinitiesByLabel.set(label, set.add(affinity));
      }
      if (a.place.bySelector) this.#affinitiesBySelector.add(affinity);
    }
    a.volumes.add(key);
    return a.place;
  }

  /** A PV of an affinity is gone from it; the affinity, once it has none, is forgotten. */
  #leave(affinity: string, key: string): void {
    const a = this.#affinities.get(affinity)!;
    a.volumes.delete(key);
    if (a.volumes.size > 0) return;
    this.#affinities.delete(affinity);
    this.#affinitiesBySelector.delete(affinity);
    for (const label of a.place.labels ?? []) {
      const set = this.#affinitiesByLabel.get(label)!;
      if (set.delete(affinity) && set.size === 0) this.#affinitiesByLabel.delete(label);
    }
  }

  #addCapacity(c: CSIStorageCapacity, nodes: NodeLookup): void {
    const key = objectKey('CSIStorageCapacity', c);
    const place = capacityPlace(c, this.#store, nodes.hosts);
    if (place ? place.bySelector === true : !!c.nodeTopology) this.#bySelector.add(key);
    else this.#bySelector.delete(key);
    if (!place) return;
    const t = this.#totals(c.storageClassName, place);
    const bytes = quantity(c.capacity);
    // Upstream VolumeBinding prefers maximumVolumeSize, "more precise", over capacity where both are set.
    const largest = c.maximumVolumeSize === undefined ? bytes : quantity(c.maximumVolumeSize);
    t.row.capacityBytes += bytes;
    t.row.capacityObjects++;
    count(t.provisionableBySize, largest, 1);
    const hostnames = this.#hostnames(place);
    this.#index(`CSIStorageCapacity/${key}`, hostnames, 1);
    this.#capacities.set(key, new Share(t.key, hostnames, bytes, undefined, largest));
  }

  #addClaim(pvc: PersistentVolumeClaim): void {
    if (pvc.spec.volumeName || pvc.status?.phase === 'Bound') return;
    const storageClass = claimClass(pvc);
    const bytes = requestedStorage(pvc);
    const w = this.#waiting.get(storageClass) ?? { storageClass, count: 0, bytes: 0 };
    this.#waiting.set(storageClass, w);
    w.count++;
    w.bytes += bytes;
    this.#claims.set(objectKey('PersistentVolumeClaim', pvc), { storageClass, bytes });
  }

  #index(placed: string, hostnames: readonly string[], by: 1 | -1): void {
    for (const h of hostnames) {
      const set = this.#byHostname.get(h) ?? new Set<string>();
      if (by === 1) this.#byHostname.set(h, set.add(placed));
      else if (set.delete(placed) && set.size === 0) {
        this.#byHostname.delete(h);
        this.#singleHostnames.delete(h); // a node gone for good leaves nothing behind
      }
    }
  }

  /** Takes an object's share back out of its row; a row left with nothing is gone, as in a fresh view. */
  #take(shares: Map<string, Share>, kind: 'PersistentVolume' | 'CSIStorageCapacity', key: string): void {
    const s = shares.get(key);
    if (!s) return;
    shares.delete(key);
    this.#index(`${kind}/${key}`, s.hostnames, -1);
    if (s.affinity !== undefined) this.#leave(s.affinity, key);
    const t = this.#rows.get(s.row)!;
    if (s.state) {
      t.row.volumes[s.state].count--;
      t.row.volumes[s.state].bytes -= s.bytes;
      if (s.state === 'available') {
        t.row.freeSizes[sizeLabel(s.bytes)]--;
        count(t.freeBySize, s.bytes, -1);
      }
    } else {
      t.row.capacityBytes -= s.bytes;
      t.row.capacityObjects--;
      count(t.provisionableBySize, s.largest!, -1);
    }
    const { available, bound, released } = t.row.volumes;
    if (available.count + bound.count + released.count + t.row.capacityObjects === 0) this.#rows.delete(s.row);
  }
}

/** A node update that can move a PV or capacity to another place: its hostname or zone label changed. */
function movesPlaces(e: StoreEvent<'Node'> & { type: 'update' }): boolean {
  const a = e.old.metadata.labels ?? {};
  const b = e.obj.metadata.labels ?? {};
  return (
    a[LABEL_HOSTNAME] !== b[LABEL_HOSTNAME] ||
    a[LABEL_TOPOLOGY_ZONE] !== b[LABEL_TOPOLOGY_ZONE] ||
    a[LABEL_FAILURE_DOMAIN_BETA_ZONE] !== b[LABEL_FAILURE_DOMAIN_BETA_ZONE]
  );
}

const sizeLabel = (bytes: number) => SIZE_BUCKETS.find(([, bound]) => bytes <= bound)![0];

function count(sizes: Map<number, number>, bytes: number, by: 1 | -1): void {
  const n = (sizes.get(bytes) ?? 0) + by;
  if (n === 0) sizes.delete(bytes);
  else sizes.set(bytes, n);
}

function largest(sizes: Map<number, number>): number {
  let max = 0;
  for (const bytes of sizes.keys()) if (bytes > max) max = bytes;
  return max;
}
