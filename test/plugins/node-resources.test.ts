// NodeResourcesFit's filter: upstream's table (plugins/noderesources fit_test.go TestEnoughRequests), with upstream's
// tiny units (milli-CPU, bytes) kept. Its score and the other scores: node-resources-scores.test.ts, image-locality.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import { podResource } from '../../src/cache/resources.ts';
import type { Container, Pod, ResourceList } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { fitsRequest, NodeResourcesFitPlugin } from '../../src/plugins/node-resources-fit.ts';
import { makeNode, makePod } from '../helpers/objects.ts';
import { view } from './helpers.ts';

// makeResources(10, 20, 32, 5, 20, 5): 10m CPU, 20 bytes, 32 pods, 20 bytes ephemeral, 5 of an extended resource.
const ALLOCATABLE: ResourceList = {
  cpu: '10m',
  memory: '20',
  pods: '32',
  'ephemeral-storage': '20',
  'example.com/aaa': '5',
};
const res = (cpu: number, memory: number, more: ResourceList = {}): ResourceList => ({
  cpu: `${cpu}m`,
  memory: String(memory),
  ...more,
});
const c = (name: string, requests: ResourceList, restartPolicy?: string): Container => ({
  name,
  resources: { requests },
  ...(restartPolicy ? { restartPolicy } : {}),
});
const pod = (name: string, containers: Container[], init: Container[] = [], overhead?: ResourceList): Pod =>
  makePod(name, { containers, initContainers: init.length ? init : undefined, overhead });

function fit(p: Pod, existing: Pod[], allocatable = ALLOCATABLE): string[] {
  const plugin = new NodeResourcesFitPlugin();
  const state = new CycleState();
  plugin.preFilter(state, p);
  return view(plugin.filter(state, p, newNodeInfo(makeNode('n', { allocatable }), existing)));
}

describe('NodeResourcesFit filter (TestEnoughRequests)', () => {
  const cases: { name: string; pod: Pod; existing: Pod; want: string[] }[] = [
    {
      name: 'no resources requested always fits',
      pod: makePod('p'),
      existing: pod('e', [c('c', res(10, 20))]),
      want: ['Success'],
    },
    {
      name: 'too many resources fails',
      pod: pod('p', [c('c', res(1, 1))]),
      existing: pod('e', [c('c', res(10, 20))]),
      want: ['Unschedulable', 'Insufficient cpu', 'Insufficient memory'],
    },
    {
      name: 'too many resources fails due to init container cpu',
      pod: pod('p', [c('c', res(1, 1))], [c('i', res(3, 1))]),
      existing: pod('e', [c('c', res(8, 19))]),
      want: ['Unschedulable', 'Insufficient cpu'],
    },
    {
      name: 'too many resources fails due to highest init container cpu',
      pod: pod('p', [c('c', res(1, 1))], [c('i1', res(3, 1)), c('i2', res(2, 1))]),
      existing: pod('e', [c('c', res(8, 19))]),
      want: ['Unschedulable', 'Insufficient cpu'],
    },
    {
      name: 'too many resources fails due to init container memory',
      pod: pod('p', [c('c', res(1, 1))], [c('i', res(1, 3))]),
      existing: pod('e', [c('c', res(9, 19))]),
      want: ['Unschedulable', 'Insufficient memory'],
    },
    {
      name: "init container fits because it's the max, not sum, of containers and init containers",
      pod: pod('p', [c('c', res(1, 1))], [c('i1', res(1, 1)), c('i2', res(1, 1))]),
      existing: pod('e', [c('c', res(9, 19))]),
      want: ['Success'],
    },
    {
      name: 'both resources fit',
      pod: pod('p', [c('c', res(1, 1))]),
      existing: pod('e', [c('c', res(5, 5))]),
      want: ['Success'],
    },
    {
      name: 'one resource memory fits',
      pod: pod('p', [c('c', res(2, 1))]),
      existing: pod('e', [c('c', res(9, 5))]),
      want: ['Unschedulable', 'Insufficient cpu'],
    },
    {
      name: 'one resource cpu fits',
      pod: pod('p', [c('c', res(1, 2))]),
      existing: pod('e', [c('c', res(5, 19))]),
      want: ['Unschedulable', 'Insufficient memory'],
    },
    {
      name: 'equal edge case',
      pod: pod('p', [c('c', res(5, 1))]),
      existing: pod('e', [c('c', res(5, 19))]),
      want: ['Success'],
    },
    {
      name: 'extended resource fits',
      pod: pod('p', [c('c', { 'example.com/aaa': '1' })]),
      existing: pod('e', [c('c', res(0, 0))]),
      want: ['Success'],
    },
    {
      name: 'extended resource capacity enforced',
      pod: pod('p', [c('c', { 'example.com/aaa': '10' })]),
      existing: pod('e', [c('c', res(0, 0))]),
      want: ['UnschedulableAndUnresolvable', 'Insufficient example.com/aaa'],
    },
    {
      name: 'extended resource allocatable enforced for init container',
      pod: pod('p', [c('c', {})], [c('i', { 'example.com/aaa': '3' })]),
      existing: pod('e', [c('c', { 'example.com/aaa': '3' })]),
      want: ['Unschedulable', 'Insufficient example.com/aaa'],
    },
    {
      name: 'extended resource not in allocatable',
      pod: pod('p', [c('c', { 'example.com/bbb': '1' })]),
      existing: pod('e', [c('c', res(0, 0))]),
      want: ['UnschedulableAndUnresolvable', 'Insufficient example.com/bbb'],
    },
    {
      name: 'resources + pod overhead fits',
      pod: pod('p', [c('c', res(1, 1))], [], res(3, 13)),
      existing: pod('e', [c('c', res(5, 5))]),
      want: ['Success'],
    },
    {
      name: 'requests + overhead does not fit for memory',
      pod: pod('p', [c('c', res(1, 1))], [], res(1, 15)),
      existing: pod('e', [c('c', res(5, 5))]),
      want: ['Unschedulable', 'Insufficient memory'],
    },
    {
      name: 'sidecar (restartable init container) requests add to the containers',
      pod: pod('p', [c('c', res(1, 1))], [c('s', res(3, 1), 'Always')]),
      existing: pod('e', [c('c', res(7, 5))]),
      want: ['Unschedulable', 'Insufficient cpu'],
    },
  ];
  for (const t of cases) it(t.name, () => assert.deepEqual(fit(t.pod, [t.existing]), t.want));

  it("even without specified resources, predicate fails when there's no space for additional pod", () => {
    assert.deepEqual(fit(makePod('p'), [makePod('e')], { ...ALLOCATABLE, pods: '1' }), [
      'Unschedulable',
      'Too many pods',
    ]);
  });
  it('too many pods and too little cpu: both reasons, unresolvable when the node has less cpu in all', () => {
    assert.deepEqual(fit(pod('p', [c('c', res(11, 1))]), [], { ...ALLOCATABLE, pods: '0' }), [
      'UnschedulableAndUnresolvable',
      'Too many pods',
      'Insufficient cpu',
    ]);
  });

  it('gives the status fitsRequest spells out, on random requests and nodes (filter reuses it per kind of shortage)', () => {
    const amount = fc.integer({ min: 0, max: 12 });
    fc.assert(
      fc.property(
        fc.record({ cpu: amount, memory: amount, eph: amount, pods: fc.integer({ min: 0, max: 3 }), aaa: amount }),
        fc.array(fc.record({ cpu: amount, memory: amount, eph: amount }), { maxLength: 3 }),
        fc.record({ cpu: amount, memory: amount, eph: amount, aaa: fc.option(amount, { nil: undefined }) }),
        (node, existing, want) => {
          const requests = (r: { cpu: number; memory: number; eph: number }) =>
            res(r.cpu, r.memory, { 'ephemeral-storage': String(r.eph) });
          const p = pod('p', [
            c('c', { ...requests(want), ...(want.aaa === undefined ? {} : { 'example.com/aaa': String(want.aaa) }) }),
          ]);
          const allocatable = {
            ...res(node.cpu, node.memory),
            pods: String(node.pods),
            'ephemeral-storage': String(node.eph),
            'example.com/aaa': String(node.aaa),
          };
          const info = newNodeInfo(
            makeNode('n', { allocatable }),
            existing.map((e, i) => pod(`e${i}`, [c('c', requests(e))])),
          );
          const plugin = new NodeResourcesFitPlugin();
          const state = new CycleState();
          plugin.preFilter(state, p);
          const short = fitsRequest(podResource(p).requests, info);
          const expected =
            short.length === 0
              ? ['Success']
              : [
                  short.some((x) => x.unresolvable) ? 'UnschedulableAndUnresolvable' : 'Unschedulable',
                  ...short.map((x) => x.reason),
                ];
          assert.deepEqual(view(plugin.filter(state, p, info)), expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});
