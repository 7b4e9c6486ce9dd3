// NodeResourcesFit's LeastAllocated and NodeResourcesBalancedAllocation scores: upstream's tables
// (plugins/noderesources least_allocated_test.go TestLeastAllocatedScoringStrategy with the default resources, cpu
// and memory weighted 1; balanced_allocation_test.go), case names kept. Upstream's quantities are kept too: cpu
// "4000" is 4000 cores, memory in bytes; only the ratios matter. A pod with no containers requests nothing at all,
// one whose containers leave cpu or memory out counts kube-scheduler's defaults (100m, 200Mi) for LeastAllocated.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import type { Node, Pod, ResourceList } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { NodeResourcesBalancedAllocationPlugin } from '../../src/plugins/node-resources-balanced-allocation.ts';
import { NodeResourcesFitPlugin } from '../../src/plugins/node-resources-fit.ts';
import { makeNode, makePod } from '../helpers/objects.ts';

const node = (name: string, cpu?: string, memory?: string, more: ResourceList = {}): Node =>
  makeNode(name, { allocatable: { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}), pods: '110', ...more } });
let n = 0;
/** upstream's st.MakePod().Req(...).Req(...): one container per request list; none at all without. */
const pod = (nodeName: string | undefined, ...requests: ResourceList[]): Pod =>
  makePod(`p${n++}`, { nodeName, containers: requests.map((r, i) => ({ name: `c${i}`, resources: { requests: r } })) });
const req = (cpu: string, memory: string): ResourceList => ({ cpu, memory });

function scores(
  plugin: NodeResourcesFitPlugin | NodeResourcesBalancedAllocationPlugin,
  p: Pod,
  nodes: Node[],
  existing: Pod[] = [],
): number[] | 'Skip' {
  const state = new CycleState();
  const infos = nodes.map((x) =>
    newNodeInfo(
      x,
      existing.filter((e) => e.spec.nodeName === x.metadata.name),
    ),
  );
  if (plugin.preScore(state, p).code === 'Skip') return 'Skip';
  return infos.map((i) => plugin.score(state, p, i));
}

describe('NodeResourcesFit score, LeastAllocated (TestLeastAllocatedScoringStrategy)', () => {
  const requested = () => pod(undefined, req('1000', '2000'), req('2000', '3000'));
  const cases: { name: string; pod: Pod; nodes: Node[]; existing?: Pod[]; want: number[] }[] = [
    {
      name: 'nothing scheduled, nothing requested',
      pod: pod(undefined),
      nodes: [node('node1', '4000', '10000'), node('node2', '4000', '10000')],
      want: [100, 100],
    },
    {
      name: 'nothing scheduled, resources requested, differently sized nodes',
      pod: requested(),
      nodes: [node('node1', '4000', '10000'), node('node2', '6000', '10000')],
      want: [37, 50],
    },
    {
      name: 'no resources requested, pods scheduled',
      pod: pod(undefined),
      nodes: [node('node1', '4000', '10000'), node('node2', '4000', '10000')],
      existing: [pod('node1'), pod('node1'), pod('node2'), pod('node2')],
      want: [100, 100],
    },
    {
      name: 'no resources requested, pods scheduled with resources',
      pod: pod(undefined),
      nodes: [node('node1', '10000', '20000'), node('node2', '10000', '20000')],
      existing: [
        pod('node1', req('3000', '0')),
        pod('node1', req('3000', '0')),
        pod('node2', req('3000', '0')),
        pod('node2', req('3000', '5000')),
      ],
      want: [70, 57],
    },
    {
      name: 'resources requested, pods scheduled with resources',
      pod: requested(),
      nodes: [node('node1', '10000', '20000'), node('node2', '10000', '20000')],
      existing: [pod('node1', req('3000', '0')), pod('node2', req('3000', '5000'))],
      want: [57, 45],
    },
    {
      name: 'resources requested, pods scheduled with resources, differently sized nodes',
      pod: requested(),
      nodes: [node('node1', '10000', '20000'), node('node2', '10000', '50000')],
      existing: [pod('node1', req('3000', '0')), pod('node2', req('3000', '5000'))],
      want: [57, 60],
    },
    {
      name: 'requested resources exceed node capacity',
      pod: pod(undefined, req('3000', '0')),
      nodes: [node('node1', '4000', '10000'), node('node2', '4000', '10000')],
      existing: [pod('node1', req('3000', '0')), pod('node2', req('3000', '5000'))],
      want: [50, 25],
    },
    {
      name: 'zero node resources, pods scheduled with resources',
      pod: pod(undefined),
      nodes: [node('node1'), node('node2')],
      existing: [pod('node1', req('3000', '0')), pod('node2', req('3000', '5000'))],
      want: [0, 0],
    },
    {
      name: 'bypass extended resource if the pod does not request',
      pod: requested(),
      nodes: [node('node1', '6000', '10000'), node('node2', '6000', '10000', { 'example.com/foo': '4' })],
      want: [50, 50],
    },
    {
      // Containers without requests count kube-scheduler's defaults (schedutil.GetNonzeroRequests): 100m of
      // 1 core, 200Mi of 400Mi.
      name: 'a container without requests counts the non-zero defaults',
      pod: makePod('defaults'),
      nodes: [node('node1', '1', String(400 * 1024 * 1024))],
      want: [Math.trunc((90 + 50) / 2)],
    },
  ];
  for (const c of cases)
    it(c.name, () => assert.deepEqual(scores(new NodeResourcesFitPlugin(), c.pod, c.nodes, c.existing), c.want));
});

describe('NodeResourcesBalancedAllocation score (balanced_allocation_test.go)', () => {
  const cases: { name: string; pod: Pod; nodes: Node[]; existing?: Pod[]; want: number[] | 'Skip' }[] = [
    {
      // Fractions cpu 3000/4000, memory 5000/10000: 1 - |0.75 - 0.5| / 2 = 0.875; node2 0.5 and 0.5.
      name: 'nothing scheduled, resources requested, differently sized nodes',
      pod: pod(undefined, req('1000', '2000'), req('2000', '3000')),
      nodes: [node('node1', '4000', '10000'), node('node2', '6000', '10000')],
      want: [87, 100],
    },
    {
      // node1: cpu 6000/10000, memory 5000/20000 → 1 - 0.175; node2: 0.6 and 0.5 → 1 - 0.05.
      name: 'resources requested, pods scheduled with resources',
      pod: pod(undefined, req('3000', '5000')),
      nodes: [node('node1', '10000', '20000'), node('node2', '10000', '20000')],
      existing: [pod('node1', req('3000', '0')), pod('node2', req('3000', '5000'))],
      want: [82, 95],
    },
    {
      // Fractions are capped at 1: node1 cpu 1, memory 0.5 → 75; node2 both 1 → 100.
      name: 'requested resources at node capacity',
      pod: pod(undefined, req('3000', '5000')),
      nodes: [node('node1', '6000', '10000'), node('node2', '6000', '10000')],
      existing: [pod('node1', req('3000', '0')), pod('node2', req('3000', '5000'))],
      want: [75, 100],
    },
    {
      // Existing pods count by their requests, not the non-zero defaults: the empty pods change nothing.
      name: 'existing pods without requests do not count',
      pod: pod(undefined, req('2000', '5000')),
      nodes: [node('node1', '4000', '10000')],
      existing: [makePod('bare', { nodeName: 'node1' })],
      want: [100],
    },
    {
      name: 'nothing scheduled, nothing requested: a best-effort pod is skipped',
      pod: pod(undefined),
      nodes: [node('node1', '4000', '10000')],
      want: 'Skip',
    },
  ];
  for (const c of cases)
    it(c.name, () =>
      assert.deepEqual(scores(new NodeResourcesBalancedAllocationPlugin(), c.pod, c.nodes, c.existing), c.want),
    );
});
