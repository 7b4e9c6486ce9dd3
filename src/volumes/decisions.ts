// Binding decisions that filter computed, kept per (pod UID, node) for the prioritize and bind that follow.
// A decision is valid only while the binder's generation is unchanged: any PV/PVC/class/capacity/CSINode/label
// change (an assumption included) makes the next reader recompute from current state.
import type { PodVolumes } from './binder.ts';

interface Entry {
  generation: number;
  podVolumes: PodVolumes;
}

export class DecisionCache {
  readonly #byPod = new Map<string, Map<string, Entry>>();
  readonly #maxPods: number;

  constructor(maxPods = 10_000) {
    this.#maxPods = maxPods;
  }

  remember(podUID: string, nodeName: string, generation: number, podVolumes: PodVolumes): void {
    let nodes = this.#byPod.get(podUID);
    if (!nodes) {
      if (this.#byPod.size >= this.#maxPods) {
        // Oldest pod first: Map iteration follows insertion order.
        const oldest = this.#byPod.keys().next().value;
        if (oldest !== undefined) this.#byPod.delete(oldest);
      }
      nodes = new Map();
      this.#byPod.set(podUID, nodes);
    }
    nodes.set(nodeName, { generation, podVolumes });
  }

  /** The decision for (pod, node) if it was computed at this generation. */
  get(podUID: string, nodeName: string, generation: number): PodVolumes | undefined {
    const entry = this.#byPod.get(podUID)?.get(nodeName);
    return entry && entry.generation === generation ? entry.podVolumes : undefined;
  }

  forgetPod(podUID: string): void {
    this.#byPod.delete(podUID);
  }

  get podCount(): number {
    return this.#byPod.size;
  }
}
