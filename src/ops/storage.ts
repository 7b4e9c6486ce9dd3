// Storage headroom per storage class and zone, read straight from the API objects the store holds: PVs free and
// bound (count, bytes, a size histogram of the free ones), CSIStorageCapacity left, and the claims still waiting.
// storageView is the definition: a pass over PVs, claims and capacities, with no state to keep current, for the route
// split by node and the CLI. The readers that ask often (scrapes, the pending report) read storage-headroom.ts, which
// keeps the same view current from the store's events.
import { selectorMatchesSafely } from '../cluster/label-selector.ts';
import { parseValue } from '../cluster/quantity.ts';
import type { ClusterStore } from '../cluster/store.ts';
import type { CSIStorageCapacity, Node, NodeSelector, PersistentVolume } from '../cluster/types.ts';
import { claimClass, pvClass } from '../cluster/volume-annotations.ts';
import { LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE } from '../cluster/well-known-labels.ts';
import { affinityIndexEntries, matchNodeSelectorTerms } from '../volumes/node-affinity.ts';
import { pvCapacity, requestedStorage } from '../volumes/pv-matching.ts';

/** Upper bounds of the free-PV size histogram, in bytes (the last bucket, "+Inf", takes the rest). */
export const SIZE_BUCKETS: readonly [label: string, bytes: number][] = [
  ['10Gi', 10 * 2 ** 30],
  ['50Gi', 50 * 2 ** 30],
  ['100Gi', 100 * 2 ** 30],
  ['500Gi', 500 * 2 ** 30],
  ['1Ti', 2 ** 40],
  ['+Inf', Number.POSITIVE_INFINITY],
];

/** PV states as the report counts them: free (Available, no claimRef), bound (a claimRef), released (Released, Failed). */
export type VolumeState = 'available' | 'bound' | 'released';

export interface StorageRow {
  storageClass: string;
  /** The zone label of the nodes the volumes and capacity reach ("" where none does: no node affinity, no node). */
  zone: string;
  /** With `byNode`: the node a local PV or a per-node CSIStorageCapacity is on. */
  node?: string;
  volumes: Record<VolumeState, { count: number; bytes: number }>;
  /** Free PVs by size: count per upper bound (SIZE_BUCKETS), not cumulative. */
  freeSizes: Record<string, number>;
  /** The largest free PV (0 when none). */
  largestFreeBytes: number;
  /** Sum of the CSIStorageCapacity objects' capacity reaching this zone, and their count. */
  capacityBytes: number;
  capacityObjects: number;
  /** The largest volume one of them admits (its maximumVolumeSize where set, else its capacity). */
  largestProvisionableBytes: number;
}

export interface StorageView {
  rows: StorageRow[];
  /** Claims not bound yet, by storage class ("" for none): what waits for a volume. */
  claimsWaiting: { storageClass: string; count: number; bytes: number }[];
}

const zoneOf = (node: Node | undefined) =>
  node?.metadata.labels?.[LABEL_TOPOLOGY_ZONE] ?? node?.metadata.labels?.[LABEL_FAILURE_DOMAIN_BETA_ZONE] ?? '';

/** Nodes by hostname label (a PV's affinity names the label, not always the node's name). */
export function nodesByHostname(store: ClusterStore): Map<string, Node> {
  const out = new Map<string, Node>();
  for (const n of store.list('Node')) out.set(n.metadata.labels?.[LABEL_HOSTNAME] ?? n.metadata.name, n);
  return out;
}

/**
 * The nodes as a pass over PVs asks for them: by hostname, and by the value of a label key (a CSI driver's own
 * topology key), each index built on its first use, so a cluster whose PVs name hostnames and zones builds no other.
 */
export class NodeLookup {
  readonly #store: ClusterStore;
  #hosts: Map<string, Node> | undefined;
  readonly #byKey = new Map<string, Map<string, Node[]>>();

  constructor(store: ClusterStore) {
    this.#store = store;
  }

  get hosts(): Map<string, Node> {
    this.#hosts ??= nodesByHostname(this.#store);
    return this.#hosts;
  }

  all(): Iterable<Node> {
    return this.#store.list('Node');
  }

  /** The nodes whose label `key` is `value`. */
  withLabel(key: string, value: string): readonly Node[] {
    let byValue = this.#byKey.get(key);
    if (!byValue) {
      byValue = new Map();
      for (const n of this.#store.list('Node')) {
        const v = n.metadata.labels?.[key];
        if (v === undefined) continue;
        const list = byValue.get(v);
        if (list) list.push(n);
        else byValue.set(v, [n]);
      }
      this.#byKey.set(key, byValue);
    }
    return byValue.get(value) ?? [];
  }
}

export interface Place {
  zone: string;
  node?: string;
  /** Placed by matching a selector against every node's labels (so any node's labels may move it). */
  bySelector?: boolean;
  /** The hostname labels whose nodes placed it (a node of that hostname appearing, going or relabelled may move it). */
  hostnames?: string[];
  /**
   * Placed through the nodes its affinity selects: the affinity (its terms as JSON, the same for every PV of that
   * affinity, which so shares one place), and the labels (`key=value`) whose nodes it looked at, any of which
   * appearing, going or relabelled may move it (with bySelector: every node).
   */
  affinity?: string;
  labels?: string[];
}

const isZoneKey = (key: string) => key === LABEL_TOPOLOGY_ZONE || key === LABEL_FAILURE_DOMAIN_BETA_ZONE;

const NO_AFFINITY: Place = Object.freeze({ zone: '' });

/**
 * Where a PV is. An affinity that names zones and hostnames only (local PVs, zonal disks labelled as upstream
 * labels them) is read as it says: its zones, and the zone of the node each hostname names. Any other affinity (a CSI
 * driver's own keys) is placed as a CSIStorageCapacity's selector is: in the zones of the nodes it selects, several
 * joined by commas, none ("", as without affinity) where it selects no node. `memo` keeps the places computed by
 * affinity for the PVs that share one.
 */
export function pvPlace(pv: PersistentVolume, nodes: NodeLookup, memo?: Map<string, Place>): Place {
  const place = pvPlaceByKeys(pv, nodes.hosts);
  if (place) return place;
  const affinity = affinityOf(pv);
  let p = memo?.get(affinity);
  if (!p) {
    p = affinityPlace(affinity, pv.spec.nodeAffinity!.required!, nodes);
    memo?.set(affinity, p);
  }
  return p;
}

/** pvPlace from the affinity's zone and hostname keys; undefined where it names other keys, which need the nodes. */
export function pvPlaceByKeys(pv: PersistentVolume, hosts: Map<string, Node>): Place | undefined {
  if (!pv.spec.nodeAffinity?.required?.nodeSelectorTerms) return NO_AFFINITY;
  const entries = affinityIndexEntries(pv);
  if (!entries) return undefined;
  const zones = new Set<string>();
  const hostnames: string[] = [];
  let node: string | undefined;
  for (const [key, value] of entries) {
    if (isZoneKey(key)) zones.add(value);
    else if (key === LABEL_HOSTNAME) {
      const n = hosts.get(value);
      node = n?.metadata.name ?? value;
      zones.add(zoneOf(n));
      hostnames.push(value);
    } else return undefined;
  }
  return { zone: [...zones].sort().join(','), node: entries.length === 1 ? node : undefined, hostnames };
}

/** The key under which PVs of one affinity share their place. */
export const affinityOf = (pv: PersistentVolume) => JSON.stringify(pv.spec.nodeAffinity?.required?.nodeSelectorTerms);

/**
 * The place of the nodes `selector` selects (a term that is one `In` of zones: those zones, as upstream labels
 * them). A term's nodes are looked up by the values of its first `In` requirement (any node it selects carries one of
 * them) and matched in full; a term without one is matched against every node.
 */
export function affinityPlace(affinity: string, selector: NodeSelector, nodes: NodeLookup): Place {
  const zones = new Set<string>();
  const selected = new Set<Node>();
  const labels = new Set<string>();
  let bySelector = false;
  let byZone = false;
  for (const term of selector.nodeSelectorTerms ?? []) {
    const exprs = term.matchExpressions ?? [];
    if (exprs.length === 0 && (term.matchFields?.length ?? 0) === 0) continue; // it selects no node
    const first = exprs.find((r) => r.operator === 'In' && (r.values?.length ?? 0) > 0);
    if (first && exprs.length === 1 && !term.matchFields?.length && isZoneKey(first.key)) {
      for (const zone of first.values!) zones.add(zone);
      byZone = true;
      continue;
    }
    const one = { nodeSelectorTerms: [term] };
    const look = (candidates: Iterable<Node>) => {
      for (const n of candidates) if (matchNodeSelectorTerms(one, n.metadata.labels)) selected.add(n);
    };
    if (!first) {
      bySelector = true;
      look(nodes.all());
    } else
      for (const value of first.values!) {
        labels.add(`${first.key}=${value}`);
        look(nodes.withLabel(first.key, value));
      }
  }
  for (const n of selected) zones.add(zoneOf(n));
  const [only] = selected;
  return {
    zone: [...zones].sort().join(','),
    node: !byZone && selected.size === 1 ? only.metadata.name : undefined,
    affinity,
    labels: [...labels],
    ...(bySelector ? { bySelector } : {}),
  };
}

/** Where a CSIStorageCapacity's nodeTopology reaches: a zone or a node named by label, else the nodes it selects. */
export function capacityPlace(c: CSIStorageCapacity, store: ClusterStore, hosts: Map<string, Node>): Place | undefined {
  const selector = c.nodeTopology;
  if (!selector) return undefined; // nil selects no node (upstream)
  const labels = selector.matchLabels ?? {};
  if (!selector.matchExpressions?.length) {
    const zone = labels[LABEL_TOPOLOGY_ZONE] ?? labels[LABEL_FAILURE_DOMAIN_BETA_ZONE];
    const host = labels[LABEL_HOSTNAME];
    if (host !== undefined) {
      const n = hosts.get(host);
      return { zone: zone ?? zoneOf(n), node: n?.metadata.name ?? host, hostnames: [host] };
    }
    if (zone !== undefined && Object.keys(labels).length === 1) return { zone };
  }
  const zones = new Set<string>();
  for (const n of store.list('Node')) if (selectorMatchesSafely(selector, n.metadata.labels)) zones.add(zoneOf(n));
  return zones.size === 0 ? undefined : { zone: [...zones].sort().join(','), bySelector: true };
}

export function emptyRow(storageClass: string, place: Place, byNode: boolean): StorageRow {
  return {
    storageClass,
    zone: place.zone,
    ...(byNode ? { node: place.node ?? '' } : {}),
    volumes: { available: { count: 0, bytes: 0 }, bound: { count: 0, bytes: 0 }, released: { count: 0, bytes: 0 } },
    freeSizes: Object.fromEntries(SIZE_BUCKETS.map(([label]) => [label, 0])),
    largestFreeBytes: 0,
    capacityBytes: 0,
    capacityObjects: 0,
    largestProvisionableBytes: 0,
  };
}

export function volumeState(pv: PersistentVolume): VolumeState {
  const phase = pv.status?.phase;
  if (phase === 'Released' || phase === 'Failed') return 'released';
  return pv.spec.claimRef ? 'bound' : 'available';
}

/** The headroom view; `byNode` splits each class and zone by node (PVs and capacities not on one node: node ""). */
export function storageView(store: ClusterStore, options: { byNode?: boolean } = {}): StorageView {
  const byNode = options.byNode ?? false;
  const nodes = new NodeLookup(store);
  const places = new Map<string, Place>();
  const rows = new Map<string, StorageRow>();
  const row = (storageClass: string, place: Place) => {
    const key = `${storageClass}\0${place.zone}\0${byNode ? (place.node ?? '') : ''}`;
    const r = rows.get(key) ?? emptyRow(storageClass, place, byNode);
    rows.set(key, r);
    return r;
  };
  for (const pv of store.list('PersistentVolume')) {
    const r = row(pvClass(pv), pvPlace(pv, nodes, places));
    const state = volumeState(pv);
    const bytes = pvCapacity(pv);
    r.volumes[state].count++;
    r.volumes[state].bytes += bytes;
    if (state !== 'available') continue;
    const [label] = SIZE_BUCKETS.find(([, bound]) => bytes <= bound)!;
    r.freeSizes[label]++;
    r.largestFreeBytes = Math.max(r.largestFreeBytes, bytes);
  }
  for (const c of store.list('CSIStorageCapacity')) {
    const place = capacityPlace(c, store, nodes.hosts);
    if (!place) continue;
    const r = row(c.storageClassName, place);
    const bytes = quantity(c.capacity);
    // Upstream VolumeBinding prefers maximumVolumeSize, "more precise", over capacity where both are set.
    const max = c.maximumVolumeSize === undefined ? bytes : quantity(c.maximumVolumeSize);
    r.capacityBytes += bytes;
    r.capacityObjects++;
    r.largestProvisionableBytes = Math.max(r.largestProvisionableBytes, max);
  }
  const waiting = new Map<string, { storageClass: string; count: number; bytes: number }>();
  for (const pvc of store.list('PersistentVolumeClaim')) {
    if (pvc.spec.volumeName || pvc.status?.phase === 'Bound') continue;
    const storageClass = claimClass(pvc);
    const w = waiting.get(storageClass) ?? { storageClass, count: 0, bytes: 0 };
    waiting.set(storageClass, w);
    w.count++;
    w.bytes += requestedStorage(pvc);
  }
  return { rows: [...rows.values()].sort(byPlace), claimsWaiting: [...waiting.values()].sort(byPlace) };
}

/** The view's order: by storage class, then zone, then node. */
export const byPlace = (a: { storageClass: string; zone?: string; node?: string }, b: typeof a) =>
  a.storageClass.localeCompare(b.storageClass) ||
  (a.zone ?? '').localeCompare(b.zone ?? '') ||
  (a.node ?? '').localeCompare(b.node ?? '');

export function quantity(q: string | number | undefined): number {
  if (q === undefined) return 0;
  try {
    return parseValue(q);
  } catch {
    return 0; // the API server validates quantities; a malformed one in a file counts as none
  }
}

/** Zones where a claim of `storageClass` asking for `bytes` finds room: a free PV or a capacity that large. */
export function zonesWithRoom(view: StorageView, storageClass: string, bytes: number): string[] {
  const zones = new Set<string>();
  for (const r of view.rows) {
    if (r.storageClass !== storageClass) continue;
    if (r.largestFreeBytes >= bytes && r.volumes.available.count > 0) zones.add(r.zone);
    else if (r.capacityObjects > 0 && r.largestProvisionableBytes >= bytes) zones.add(r.zone);
  }
  return [...zones].sort();
}
