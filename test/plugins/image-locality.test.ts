// ImageLocality: upstream's table (plugins/imagelocality image_locality_test.go TestImageLocalityPriority), sizes in
// MiB as upstream's mb. A node's score is the sum over the pod's images it holds of size × (nodes holding it / all
// nodes), clamped to [23 MiB, 1000 MiB × containers] and scaled to 0..100.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import type { Node, Pod } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { ImageLocalityPlugin, normalizedImageName } from '../../src/plugins/image-locality.ts';
import { makeNode, makePod } from '../helpers/objects.ts';

const MB = 1024 * 1024;
const node = (name: string, images: [string[], number][]) =>
  makeNode(name, { images: images.map(([names, mb]) => ({ names, sizeBytes: mb * MB })) });
const pod = (images: string[], init: string[] = []): Pod =>
  makePod('p', {
    containers: images.map((image, i) => ({ name: `c${i}`, image })),
    initContainers: init.length ? init.map((image, i) => ({ name: `i${i}`, image })) : undefined,
  });

function scores(p: Pod, nodes: Node[]): number[] {
  const infos = nodes.map((n) => newNodeInfo(n));
  const plugin = new ImageLocalityPlugin({ list: () => infos });
  const state = new CycleState();
  plugin.preScore(state, p);
  return infos.map((i) => plugin.score(state, p, i));
}

const node403002000 = node('node1', [
  [['gcr.io/40:latest', 'gcr.io/40:v1', 'gcr.io/40:v1'], 40],
  [['gcr.io/300:latest', 'gcr.io/300:v1'], 300],
  [['gcr.io/2000:latest'], 2000],
]);
const node25010 = node('node2', [
  [['gcr.io/250:latest'], 250],
  [['gcr.io/10:latest', 'gcr.io/10:v1'], 10],
]);
const node60040900 = node('node1', [
  [['gcr.io/600:latest'], 600],
  [['gcr.io/40:latest'], 40],
  [['gcr.io/900:latest'], 900],
]);
const node300600900 = node('node2', [
  [['gcr.io/300:latest'], 300],
  [['gcr.io/600:latest'], 600],
  [['gcr.io/900:latest'], 900],
]);
const node400030 = node('node1', [
  [['gcr.io/4000:latest'], 4000],
  [['gcr.io/30:latest'], 30],
]);
const node203040 = node('node2', [
  [['gcr.io/20:latest'], 20],
  [['gcr.io/30:latest'], 30],
  [['gcr.io/40:latest'], 40],
]);

describe('ImageLocality score (TestImageLocalityPriority)', () => {
  const cases: { name: string; pod: Pod; nodes: Node[]; want: number[] }[] = [
    {
      // node1: 40 × 1/2 = 20 MiB, under the floor → 0; node2: 250 × 1/2 = 125 → 100 × (125 - 23) / (2000 - 23) = 5.
      name: 'two images spread on two nodes, prefer the larger image one',
      pod: pod(['gcr.io/40', 'gcr.io/250']),
      nodes: [node403002000, node25010],
      want: [0, 5],
    },
    {
      // node1: (40 + 300) × 1/2 = 170 → 100 × 147 / 1977 = 7.
      name: 'two images on one node, prefer this node',
      pod: pod(['gcr.io/40', 'gcr.io/300']),
      nodes: [node403002000, node25010],
      want: [7, 0],
    },
    {
      // node1: 4000 × 1/2 = 2000, the ceiling for two containers → 100; node2: 10 × 1/2 → 0.
      name: 'if exceed limit, use limit',
      pod: pod(['gcr.io/10', 'gcr.io/4000']),
      nodes: [node400030, node25010],
      want: [100, 0],
    },
    {
      // Three containers, ceiling 3000: node1 600 + 900 (both nodes hold them) = 1500 → 49;
      // node2 also 300 × 1/2 → 1650 → 54.
      name: 'if exceed limit by num of containers, use limit',
      pod: pod(['gcr.io/300', 'gcr.io/600', 'gcr.io/900']),
      nodes: [node60040900, node300600900],
      want: [49, 54],
    },
    {
      // The init container's image counts as any other, and as a container for the ceiling (2000): both nodes hold
      // gcr.io/30 (30 × 2/2 = 30 → 100 × 7 / 1977 = 0 on node1); node2 adds 40 × 1/2 = 20 → 50 → 100 × 27 / 1977 = 1.
      name: 'pod with init containers: their images count too',
      pod: pod(['gcr.io/40'], ['gcr.io/30']),
      nodes: [node400030, node203040],
      want: [0, 1],
    },
    {
      name: 'no image of the pod anywhere scores 0 everywhere',
      pod: pod(['gcr.io/absent']),
      nodes: [node403002000, node25010],
      want: [0, 0],
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(scores(c.pod, c.nodes), c.want));

  it('an image named without a tag is :latest; a registry port is not a tag', () => {
    assert.equal(normalizedImageName('gcr.io/40'), 'gcr.io/40:latest');
    assert.equal(normalizedImageName('gcr.io/40:v1'), 'gcr.io/40:v1');
    assert.equal(normalizedImageName('localhost:5000/img'), 'localhost:5000/img:latest');
  });
});
