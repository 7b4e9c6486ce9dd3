// ImageLocality (upstream plugins/imagelocality): prefers nodes that already hold the pod's images, each image's
// size scaled by the share of nodes holding it (so an image everywhere does not pull pods together).
import type { NodeInfo } from '../cache/node-info.ts';
import type { Pod } from '../cluster/types.ts';
import type { CycleState } from '../framework/cycle-state.ts';
import { type PreScorePlugin, type ScorePlugin, type Status, SUCCESS } from '../framework/interfaces.ts';
import { MAX_NODE_SCORE } from '../framework/runner.ts';
import type { NodeInfoLister } from './helper.ts';

export const IMAGE_LOCALITY = 'ImageLocality';
const MB = 1024 * 1024;
const MIN_THRESHOLD = 23 * MB;
const MAX_CONTAINER_THRESHOLD = 1000 * MB;
const PRE_SCORE_KEY = 'PreScoreImageLocality';

/** normalizedImageName: an image without a tag is `:latest`. */
export function normalizedImageName(name: string): string {
  return name.lastIndexOf(':') <= name.lastIndexOf('/') ? `${name}:latest` : name;
}

interface ImageSpread {
  /** Image name → how many nodes hold it. */
  numNodes: Map<string, number>;
  totalNodes: number;
}

export class ImageLocalityPlugin implements PreScorePlugin, ScorePlugin {
  readonly name = IMAGE_LOCALITY;
  readonly #nodes: NodeInfoLister;

  constructor(nodes: NodeInfoLister) {
    this.#nodes = nodes;
  }

  /** How many of all nodes hold each of the pod's images (upstream keeps it in the snapshot's ImageStates). */
  preScore(state: CycleState, pod: Pod): Status {
    const wanted = new Set(
      [...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => normalizedImageName(c.image ?? '')),
    );
    const all = this.#nodes.list();
    const numNodes = new Map<string, number>();
    for (const info of all) {
      for (const image of wanted) if (info.imageStates.has(image)) numNodes.set(image, (numNodes.get(image) ?? 0) + 1);
    }
    state.write(PRE_SCORE_KEY, { numNodes, totalNodes: all.length } satisfies ImageSpread);
    return SUCCESS;
  }

  score(state: CycleState, pod: Pod, nodeInfo: NodeInfo): number {
    const spread = state.read<ImageSpread>(PRE_SCORE_KEY);
    if (!spread || spread.totalNodes === 0) return 0;
    const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
    let sum = 0;
    for (const c of containers) {
      const image = normalizedImageName(c.image ?? '');
      const size = nodeInfo.imageStates.get(image);
      if (size === undefined) continue;
      // scaledImageScore: size times the share as float64, truncated (size*n/total rounds differently).
      sum += Math.trunc(size * ((spread.numNodes.get(image) ?? 0) / spread.totalNodes));
    }
    const max = MAX_CONTAINER_THRESHOLD * containers.length;
    const clamped = Math.min(Math.max(sum, MIN_THRESHOLD), max);
    return Math.trunc((MAX_NODE_SCORE * (clamped - MIN_THRESHOLD)) / (max - MIN_THRESHOLD));
  }
}
