// A point-in-time view of the cache's nodes for one request (upstream backend/cache/snapshot.go).
// Its NodeInfos are private copies: the cache changing later never alters a NodeInfo a caller already holds, and
// updating a snapshot replaces changed entries (and the list array) instead of writing into them.
import type { Node, Pod } from '../cluster/types.ts';
import { type MutableNodeInfo, type NodeInfo, newNodeInfo, nextGeneration } from './node-info.ts';
import { NodeTree } from './node-tree.ts';

/** What a snapshot needs from the cache to bring itself up to date. */
export interface SnapshotSource {
  /** The generation of the newest change the source has made (node infos, node removals). */
  generation(): number;
  /** NodeInfos (including ghosts) whose generation is newer than `generation`; may stop early once older. */
  changedSince(generation: number): Iterable<MutableNodeInfo>;
  readonly tree: Pick<NodeTree, 'version' | 'numNodes' | 'has' | 'list'>;
}

export class Snapshot {
  #map = new Map<string, NodeInfo>();
  #list: readonly NodeInfo[] = [];
  #indexOf = new Map<string, number>();
  /** "namespace/claim" → pods using it on any node of the snapshot (upstream usedPVCSet, counted). */
  readonly #pvcRefCounts = new Map<string, number>();
  #generation = 0;
  #treeVersion = -1;

  /** A snapshot built straight from objects (upstream NewSnapshot); pods on unknown nodes are dropped. */
  static fromObjects(nodes: readonly Node[], pods: readonly Pod[]): Snapshot {
    const tree = new NodeTree();
    const infos = new Map<string, MutableNodeInfo>();
    for (const node of nodes) {
      tree.addNode(node);
      infos.set(node.metadata.name, newNodeInfo(node));
    }
    for (const pod of pods) {
      const info = pod.spec.nodeName ? infos.get(pod.spec.nodeName) : undefined;
      info?.addPod(pod);
    }
    const generation = nextGeneration();
    const snapshot = new Snapshot();
    snapshot.updateFrom({ generation: () => generation, changedSince: () => infos.values(), tree });
    return snapshot;
  }

  /** The cache generation this snapshot reflects. */
  get generation(): number {
    return this.#generation;
  }

  get numNodes(): number {
    return this.#list.length;
  }

  get(name: string): NodeInfo | undefined {
    return this.#map.get(name);
  }

  /** NodeInfos in node tree order (zones interleaved). The array is never mutated after it is returned. */
  list(): readonly NodeInfo[] {
    return this.#list;
  }

  /** Upstream IsPVCUsedByPods: some pod on a node of this snapshot mounts the claim ("namespace/name"). */
  isPVCUsedByPods(key: string): boolean {
    return this.#pvcRefCounts.has(key);
  }

  /** Copies only NodeInfos changed since this snapshot's generation; drops deleted and ghost nodes. */
  updateFrom(source: SnapshotSource): void {
    const structural = source.tree.version !== this.#treeVersion;
    const replaced: NodeInfo[] = [];
    for (const info of source.changedSince(this.#generation)) {
      if (info.generation <= this.#generation) break;
      const old = this.#map.get(info.name);
      if (old) this.#countClaims(old, -1);
      if (info.node) {
        const copy = info.clone();
        this.#map.set(info.name, copy);
        this.#countClaims(copy, 1);
        replaced.push(copy);
      } else {
        this.#map.delete(info.name);
      }
    }
    if (structural) {
      // Membership or order changed: drop what left the tree, then take the tree's order.
      for (const [name, info] of this.#map) {
        if (!source.tree.has(name)) {
          this.#map.delete(name);
          this.#countClaims(info, -1);
        }
      }
      const list: NodeInfo[] = [];
      this.#indexOf = new Map();
      for (const name of source.tree.list()) {
        const info = this.#map.get(name);
        if (!info) continue;
        this.#indexOf.set(name, list.length);
        list.push(info);
      }
      this.#list = list;
    } else if (replaced.length > 0) {
      const list = this.#list.slice();
      for (const info of replaced) {
        const i = this.#indexOf.get(info.name);
        if (i !== undefined) list[i] = info;
      }
      this.#list = list;
    }
    this.#generation = source.generation();
    this.#treeVersion = source.tree.version;
  }

  #countClaims(info: NodeInfo, sign: 1 | -1): void {
    for (const [key, count] of info.pvcRefCounts) {
      const next = (this.#pvcRefCounts.get(key) ?? 0) + sign * count;
      if (next <= 0) this.#pvcRefCounts.delete(key);
      else this.#pvcRefCounts.set(key, next);
    }
  }
}
