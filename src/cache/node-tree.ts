// Node names grouped by zone (upstream backend/cache/node_tree.go). Listing takes the first node of every zone, then
// the second of every zone, and so on, so a scheduler that stops after "enough" feasible nodes still spreads them.
import type { Node } from '../cluster/types.ts';
import {
  LABEL_FAILURE_DOMAIN_BETA_REGION,
  LABEL_FAILURE_DOMAIN_BETA_ZONE,
  LABEL_TOPOLOGY_REGION,
  LABEL_TOPOLOGY_ZONE,
} from '../cluster/well-known-labels.ts';

/**
 * Upstream component-helpers GetZoneKey: region and zone, each falling back to the deprecated beta label only when
 * the GA label is absent; "" when both are empty. The NUL keeps "a:b"+"c" apart from "a"+"b:c".
 */
export function zoneKey(node: Node): string {
  const labels = node.metadata.labels;
  if (!labels) return '';
  const zone =
    (LABEL_TOPOLOGY_ZONE in labels ? labels[LABEL_TOPOLOGY_ZONE] : labels[LABEL_FAILURE_DOMAIN_BETA_ZONE]) ?? '';
  const region =
    (LABEL_TOPOLOGY_REGION in labels ? labels[LABEL_TOPOLOGY_REGION] : labels[LABEL_FAILURE_DOMAIN_BETA_REGION]) ?? '';
  if (region === '' && zone === '') return '';
  return `${region}:\x00:${zone}`;
}

export class NodeTree {
  /** zone → node names, both in insertion order; a zone emptied and refilled goes to the end, as upstream. */
  readonly #zones = new Map<string, Set<string>>();
  /** The zone each node was filed under, so removal and relabelling never depend on the caller's copy. */
  readonly #zoneOf = new Map<string, string>();
  #list: string[] | undefined;
  #version = 0;

  get numNodes(): number {
    return this.#zoneOf.size;
  }

  /** Bumped on every change of membership or order; snapshots rebuild their node list when it moves. */
  get version(): number {
    return this.#version;
  }

  has(name: string): boolean {
    return this.#zoneOf.has(name);
  }

  /** Adds the node, or moves it if its zone changed; a no-op if it is already filed under the same zone. */
  addNode(node: Node): void {
    const name = node.metadata.name;
    const zone = zoneKey(node);
    const current = this.#zoneOf.get(name);
    if (current === zone) return;
    if (current !== undefined) this.#detach(name, current);
    let names = this.#zones.get(zone);
    if (!names) {
      names = new Set();
      this.#zones.set(zone, names);
    }
    names.add(name);
    this.#zoneOf.set(name, zone);
    this.#changed();
  }

  /** Upstream updateNode: only a zone change matters. */
  updateNode(node: Node): void {
    this.addNode(node);
  }

  /** Returns false when the node was not in the tree. */
  removeNode(name: string): boolean {
    const zone = this.#zoneOf.get(name);
    if (zone === undefined) return false;
    this.#detach(name, zone);
    this.#zoneOf.delete(name);
    this.#changed();
    return true;
  }

  /** Names interleaved across zones. The returned array is shared until the next change: do not mutate it. */
  list(): readonly string[] {
    if (this.#list) return this.#list;
    const zones = [...this.#zones.values()].map((names) => [...names]);
    const out: string[] = [];
    for (let i = 0; out.length < this.#zoneOf.size; i++) {
      for (const names of zones) if (i < names.length) out.push(names[i]);
    }
    this.#list = out;
    return out;
  }

  #detach(name: string, zone: string): void {
    const names = this.#zones.get(zone);
    names?.delete(name);
    if (names?.size === 0) this.#zones.delete(zone);
  }

  #changed(): void {
    this.#list = undefined;
    this.#version++;
  }
}
