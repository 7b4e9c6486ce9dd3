// Storage headroom per storage class and zone, read straight from the API objects the store holds: PVs free and
// bound (count, bytes, a size histogram of the free ones), CSIStorageCapacity left, and the claims still waiting.
// storageView is the definition: a pass over PVs, claims and capacities, with no state to keep current, for the route
// split by node and the CLI. The readers that ask often (scrapes, the pending report) read storage-headroom.ts, which
// keeps the same view current from the store's events.
import { selectorMatchesSafely } from '../cluster/label-selector.ts';
import { parseValue } from '../cluster/quantity.ts';
import type { ClusterStore } from '../cluster/store.ts';
import type { CSIStorageCapacity, Node, PersistentVolume } from '../cluster/types.ts';
import { claimClass, pvClass } from '../cluster/volume-annotations.ts';
import { LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE } from '../cluster/well-known-labels.ts';
import { affinityIndexEntries } from '../volumes/node-affinity.ts';
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
  /** The zone label of the nodes the volumes and capacity reach ("" where they do not say: no node affinity). */
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

export interface Place {
  zone: string;
  node?: string;
  /** Placed by matching a selector against every node's labels (so any node's labels may move it). */
  bySelector?: boolean;
  /** The hostname labels whose nodes placed it (a node of that hostname appearing, going or relabelled may move it). */
  hostnames?: string[];
}

/** Where a PV is: its affinity's zone, or the zone of the node its hostname affinity names. */
export function pvPlace(pv: PersistentVolume, hosts: Map<string, Node>): Place {
  const entries = affinityIndexEntries(pv) ?? [];
  const zones = new Set<string>();
  const hostnames: string[] = [];
  let node: string | undefined;
  for (const [key, value] of entries) {
    if (key === LABEL_TOPOLOGY_ZONE || key === LABEL_FAILURE_DOMAIN_BETA_ZONE) zones.add(value);
    else if (key === LABEL_HOSTNAME) {
      const n = hosts.get(value);
      node = n?.metadata.name ?? value;
      zones.add(zoneOf(n));
      hostnames.push(value);
    }
  }
  return { zone: [...zones].sort().join(','), node: entries.length === 1 ? node : undefined, hostnames };
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
  const hosts = nodesByHostname(store);
  const rows = new Map<string, StorageRow>();
  const row = (storageClass: string, place: Place) => {
    const key = `${storageClass}\0${place.zone}\0${byNode ? (place.node ?? '') : ''}`;
    const r = rows.get(key) ?? emptyRow(storageClass, place, byNode);
    rows.set(key, r);
    return r;
  };
  for (const pv of store.list('PersistentVolume')) {
    const r = row(pvClass(pv), pvPlace(pv, hosts));
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
    const place = capacityPlace(c, store, hosts);
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
