// NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts: upstream's table tests
// (plugins/nodeunschedulable, nodename, tainttoleration, nodeaffinity, nodeports), case names kept.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import type { Node, NodeSelectorTerm, Pod, Taint, Toleration } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import type { AnyPlugin, NodeScore } from '../../src/framework/interfaces.ts';
import { NodeAffinityPlugin } from '../../src/plugins/node-affinity.ts';
import { NodeNamePlugin } from '../../src/plugins/node-name.ts';
import { NodePortsPlugin } from '../../src/plugins/node-ports.ts';
import { NodeUnschedulablePlugin } from '../../src/plugins/node-unschedulable.ts';
import { TaintTolerationPlugin } from '../../src/plugins/taint-toleration.ts';
import { makeNode, makePod } from '../helpers/objects.ts';
import { view } from './helpers.ts';

const withSpec = (node: Node, spec: Node['spec']): Node => ({ ...node, spec });
const podWith = (spec: Partial<Pod['spec']>, name = 'p'): Pod => {
  const p = makePod(name);
  return { ...p, spec: { ...p.spec, ...spec } };
};

/** preFilter, then filter unless preFilter skipped or failed; the status as [code, ...reasons]. */
function run(plugin: AnyPlugin, pod: Pod, node: Node, pods: Pod[] = []): string[] {
  const state = new CycleState();
  const pre = plugin.preFilter?.(state, pod);
  if (pre && pre.code === 'Skip') return ['Skip'];
  if (pre && pre.code !== 'Success') return view(pre);
  return view(plugin.filter!(state, pod, newNodeInfo(node, pods)));
}

function scores(plugin: AnyPlugin, pod: Pod, nodes: Node[]): Record<string, number> {
  const state = new CycleState();
  const infos = nodes.map((n) => newNodeInfo(n));
  const pre = plugin.preScore?.(state, pod, infos);
  if (pre?.code === 'Skip') return Object.fromEntries(nodes.map((n) => [n.metadata.name, 0]));
  const list: NodeScore[] = infos.map((i) => ({ name: i.name, score: plugin.score!(state, pod, i) }));
  plugin.normalizeScore?.(state, pod, list);
  return Object.fromEntries(list.map((s) => [s.name, s.score]));
}

describe('NodeUnschedulable', () => {
  const cordoned = withSpec(makeNode('n'), { unschedulable: true });
  it('Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)', () => {
    assert.deepEqual(run(new NodeUnschedulablePlugin(), makePod('p'), cordoned), [
      'UnschedulableAndUnresolvable',
      'node(s) were unschedulable',
    ]);
  });
  it('Schedule pod to normal node', () => {
    assert.deepEqual(run(new NodeUnschedulablePlugin(), makePod('p'), withSpec(makeNode('n'), {})), ['Success']);
  });
  it('Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)', () => {
    const pod = podWith({
      tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }],
    });
    assert.deepEqual(run(new NodeUnschedulablePlugin(), pod, cordoned), ['Success']);
  });
});

describe('NodeName', () => {
  const plugin = new NodeNamePlugin();
  it('no host specified', () => assert.deepEqual(run(plugin, makePod('p'), makeNode('foo')), ['Success']));
  it('host matches', () => assert.deepEqual(run(plugin, podWith({ nodeName: 'foo' }), makeNode('foo')), ['Success']));
  it("host doesn't match", () =>
    assert.deepEqual(run(plugin, podWith({ nodeName: 'bar' }), makeNode('foo')), [
      'UnschedulableAndUnresolvable',
      "node(s) didn't match the requested node name",
    ]));
});

describe('TaintToleration filter', () => {
  const taint = (key: string, value: string, effect: string): Taint => ({ key, value, effect });
  const untolerated = ['UnschedulableAndUnresolvable', 'node(s) had untolerated taint(s)'];
  const cases: { name: string; tolerations?: Toleration[]; taints: Taint[]; want: string[] }[] = [
    {
      name: "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
      taints: [taint('dedicated', 'user1', 'NoSchedule')],
      want: untolerated,
    },
    {
      name: 'A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule',
      tolerations: [{ key: 'dedicated', value: 'user1', effect: 'NoSchedule' }],
      taints: [taint('dedicated', 'user1', 'NoSchedule')],
      want: ['Success'],
    },
    {
      name: "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'user2', effect: 'NoSchedule' }],
      taints: [taint('dedicated', 'user1', 'NoSchedule')],
      want: untolerated,
    },
    {
      name: 'A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node',
      tolerations: [{ key: 'foo', operator: 'Exists', effect: 'NoSchedule' }],
      taints: [taint('foo', 'bar', 'NoSchedule')],
      want: ['Success'],
    },
    {
      name: 'A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled onto the node',
      tolerations: [
        { key: 'dedicated', operator: 'Equal', value: 'user2', effect: 'NoSchedule' },
        { key: 'foo', operator: 'Exists', effect: 'NoSchedule' },
      ],
      taints: [taint('dedicated', 'user2', 'NoSchedule'), taint('foo', 'bar', 'NoSchedule')],
      want: ['Success'],
    },
    {
      name: "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node",
      tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'PreferNoSchedule' }],
      taints: [taint('foo', 'bar', 'NoSchedule')],
      want: untolerated,
    },
    {
      name: 'The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node',
      tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar' }],
      taints: [taint('foo', 'bar', 'NoSchedule')],
      want: ['Success'],
    },
    {
      name: "The pod has a toleration that key and value don't match the taint on the node, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'user2', effect: 'NoSchedule' }],
      taints: [taint('dedicated', 'user1', 'PreferNoSchedule')],
      want: ['Success'],
    },
    {
      name: 'The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node',
      taints: [taint('dedicated', 'user1', 'PreferNoSchedule')],
      want: ['Success'],
    },
    {
      name: 'A NoExecute taint excludes the node like NoSchedule',
      taints: [taint('foo', 'bar', 'NoExecute')],
      want: untolerated,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const node = withSpec(makeNode('n'), { taints: c.taints });
      assert.deepEqual(run(new TaintTolerationPlugin(), podWith({ tolerations: c.tolerations }), node), c.want);
    });
  }
});

describe('TaintToleration score', () => {
  const plugin = new TaintTolerationPlugin();
  const tainted = (name: string, taints: Taint[]) => withSpec(makeNode(name), { taints });
  it('node with taints tolerated by the pod, gets a higher score than those node with intolerable taints', () => {
    const pod = podWith({ tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'PreferNoSchedule' }] });
    const nodes = [
      tainted('nodeA', [{ key: 'foo', value: 'bar', effect: 'PreferNoSchedule' }]),
      tainted('nodeB', [{ key: 'foo', value: 'blah', effect: 'PreferNoSchedule' }]),
    ];
    assert.deepEqual(scores(plugin, pod, nodes), { nodeA: 100, nodeB: 0 });
  });
  it('the more intolerable taints a node has, the lower score it gets', () => {
    const pod = podWith({ tolerations: [{ key: 'foo', operator: 'Equal', value: 'bar', effect: 'PreferNoSchedule' }] });
    const nodes = [
      tainted('nodeA', []),
      tainted('nodeB', [{ key: 'cpu-type', value: 'arm64', effect: 'PreferNoSchedule' }]),
      tainted('nodeC', [
        { key: 'cpu-type', value: 'arm64', effect: 'PreferNoSchedule' },
        { key: 'disk-type', value: 'ssd', effect: 'PreferNoSchedule' },
      ]),
    ];
    assert.deepEqual(scores(plugin, pod, nodes), { nodeA: 100, nodeB: 50, nodeC: 0 });
  });
  it('taints-tolerations priority only takes care about the taints and tolerations that have effect PreferNoSchedule', () => {
    const pod = podWith({
      tolerations: [{ key: 'cpu-type', operator: 'Equal', value: 'arm64', effect: 'NoSchedule' }],
    });
    const nodes = [
      tainted('nodeA', []),
      tainted('nodeB', [{ key: 'cpu-type', value: 'arm64', effect: 'NoSchedule' }]),
      tainted('nodeC', [{ key: 'cpu-type', value: 'arm64', effect: 'PreferNoSchedule' }]),
    ];
    assert.deepEqual(scores(plugin, pod, nodes), { nodeA: 100, nodeB: 100, nodeC: 0 });
  });
});

describe('NodeAffinity filter', () => {
  const fail = ['UnschedulableAndUnresolvable', "node(s) didn't match Pod's node affinity/selector"];
  const required = (terms: NodeSelectorTerm[]) =>
    podWith({
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
    });
  const cases: { name: string; pod: Pod; labels?: Record<string, string>; node?: string; want: string[] }[] = [
    { name: 'no selector', pod: makePod('p'), want: ['Skip'] },
    { name: 'missing labels', pod: podWith({ nodeSelector: { foo: 'bar' } }), want: fail },
    { name: 'same labels', pod: podWith({ nodeSelector: { foo: 'bar' } }), labels: { foo: 'bar' }, want: ['Success'] },
    {
      name: 'node labels are superset',
      pod: podWith({ nodeSelector: { foo: 'bar' } }),
      labels: { foo: 'bar', baz: 'blah' },
      want: ['Success'],
    },
    {
      name: 'node labels are subset',
      pod: podWith({ nodeSelector: { foo: 'bar', baz: 'blah' } }),
      labels: { foo: 'bar' },
      want: fail,
    },
    {
      name: 'Pod with matchExpressions using In operator that matches the existing node',
      pod: required([{ matchExpressions: [{ key: 'foo', operator: 'In', values: ['bar', 'value2'] }] }]),
      labels: { foo: 'bar' },
      want: ['Success'],
    },
    {
      name: 'Pod with matchExpressions using Gt operator that matches the existing node',
      pod: required([{ matchExpressions: [{ key: 'kernel-version', operator: 'Gt', values: ['0204'] }] }]),
      labels: { 'kernel-version': '0206' },
      want: ['Success'],
    },
    {
      name: 'Pod with matchExpressions using NotIn operator that matches the existing node',
      pod: required([{ matchExpressions: [{ key: 'mem-type', operator: 'NotIn', values: ['DDR', 'DDR2'] }] }]),
      labels: { 'mem-type': 'DDR3' },
      want: ['Success'],
    },
    {
      name: 'Pod with matchExpressions using Exists operator that matches the existing node',
      pod: required([{ matchExpressions: [{ key: 'GPU', operator: 'Exists' }] }]),
      labels: { GPU: 'NVIDIA-GRID-K1' },
      want: ['Success'],
    },
    {
      name: "Pod with affinity that don't match node's labels won't schedule onto the node",
      pod: required([{ matchExpressions: [{ key: 'foo', operator: 'In', values: ['value1', 'value2'] }] }]),
      labels: { foo: 'bar' },
      want: fail,
    },
    {
      name: "Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
      pod: required([]),
      labels: { foo: 'bar' },
      want: fail,
    },
    {
      name: "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
      pod: required([{}]),
      labels: { foo: 'bar' },
      want: fail,
    },
    {
      name: 'Pod with matchFields using In operator that matches the existing node',
      pod: required([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1'] }] }]),
      node: 'node1',
      want: ['Success'],
    },
    {
      name: 'Pod with matchFields using In operator that does not match the existing node',
      pod: required([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1'] }] }]),
      node: 'node2',
      want: fail,
    },
    {
      name: 'Pod with two terms: matchFields does not match, but matchExpressions matches',
      pod: required([
        { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1'] }] },
        { matchExpressions: [{ key: 'foo', operator: 'In', values: ['bar'] }] },
      ]),
      labels: { foo: 'bar' },
      node: 'node2',
      want: ['Success'],
    },
    {
      name: 'Pod with one term: matchFields does not match, but matchExpressions matches',
      pod: required([
        {
          matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1'] }],
          matchExpressions: [{ key: 'foo', operator: 'In', values: ['bar'] }],
        },
      ]),
      labels: { foo: 'bar' },
      node: 'node2',
      want: fail,
    },
    {
      name: 'Pod with one term: both matchFields and matchExpressions match',
      pod: required([
        {
          matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1'] }],
          matchExpressions: [{ key: 'foo', operator: 'In', values: ['bar'] }],
        },
      ]),
      labels: { foo: 'bar' },
      node: 'node1',
      want: ['Success'],
    },
    {
      name: 'Pod with two conflicting matchFields requirements in one term: preFilter refuses every node',
      pod: required([
        {
          matchFields: [
            { key: 'metadata.name', operator: 'In', values: ['node1'] },
            { key: 'metadata.name', operator: 'In', values: ['node2'] },
          ],
        },
      ]),
      node: 'node1',
      want: ['UnschedulableAndUnresolvable', 'pod affinity terms conflict'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const node = makeNode(c.node ?? 'node1', { labels: c.labels });
      assert.deepEqual(run(new NodeAffinityPlugin(), c.pod, node), c.want);
    });
  }

  it('terms naming nodes narrow the cycle to them (PreFilterResult); a term without names does not', () => {
    const plugin = new NodeAffinityPlugin();
    const named = required([
      { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1', 'node2'] }] },
      { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node3'] }] },
    ]);
    const state = new CycleState();
    plugin.preFilter(state, named);
    assert.deepEqual([...(plugin.preFilterResult(state) ?? [])].sort(), ['node1', 'node2', 'node3']);
    const mixed = required([
      { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1'] }] },
      { matchExpressions: [{ key: 'foo', operator: 'Exists' }] },
    ]);
    const other = new CycleState();
    plugin.preFilter(other, mixed);
    assert.equal(plugin.preFilterResult(other), undefined);
  });
});

describe('NodeAffinity score', () => {
  const preferred = podWith({
    affinity: {
      nodeAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 2, preference: { matchExpressions: [{ key: 'foo', operator: 'In', values: ['bar'] }] } },
          { weight: 4, preference: { matchExpressions: [{ key: 'key', operator: 'In', values: ['value'] }] } },
          { weight: 5, preference: { matchExpressions: [{ key: 'az', operator: 'In', values: ['az1'] }] } },
        ],
      },
    },
  });
  it('all nodes are same priority as NodeAffinity is nil', () => {
    const nodes = [makeNode('node1', { labels: { foo: 'bar' } }), makeNode('node2')];
    assert.deepEqual(scores(new NodeAffinityPlugin(), makePod('p'), nodes), { node1: 0, node2: 0 });
  });
  it('all nodes matches the preferred scheduling requirements of pod but with different priorities', () => {
    const nodes = [
      makeNode('node1', { labels: { foo: 'bar' } }),
      makeNode('node2', { labels: { foo: 'bar', az: 'az1' } }),
      makeNode('node5', { labels: { foo: 'bar', key: 'value', az: 'az1' } }),
    ];
    // 2, 7 and 11 of 11: 18, 63, 100.
    assert.deepEqual(scores(new NodeAffinityPlugin(), preferred, nodes), { node1: 18, node2: 63, node5: 100 });
  });
  it('no node matches preferred scheduling requirements in NodeAffinity of pod, all nodes score 0', () => {
    const nodes = [makeNode('node1', { labels: { foo: 'bar1' } }), makeNode('node2', { labels: { key: 'value1' } })];
    assert.deepEqual(scores(new NodeAffinityPlugin(), preferred, nodes), { node1: 0, node2: 0 });
  });
  it('only node1 matches the preferred scheduling requirements of pod', () => {
    const nodes = [makeNode('node1', { labels: { foo: 'bar' } }), makeNode('node2', { labels: { key: 'value1' } })];
    assert.deepEqual(scores(new NodeAffinityPlugin(), preferred, nodes), { node1: 100, node2: 0 });
  });
  it('an empty preference matches no node, a zero weight counts nothing, metadata.name is a field', () => {
    const pod = podWith({
      affinity: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 10, preference: {} },
            { weight: 0, preference: { matchExpressions: [{ key: 'foo', operator: 'Exists' }] } },
            { weight: 3, preference: { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node2'] }] } },
          ],
        },
      },
    });
    const nodes = [makeNode('node1', { labels: { foo: 'bar' } }), makeNode('node2')];
    assert.deepEqual(scores(new NodeAffinityPlugin(), pod, nodes), { node1: 0, node2: 100 });
  });
});

describe('NodePorts', () => {
  const withPorts = (name: string, ports: [string, string, number][]) =>
    podWith(
      {
        containers: [
          {
            name: 'c',
            ports: ports.map(([protocol, hostIP, hostPort]) => ({
              containerPort: hostPort,
              protocol,
              hostIP,
              hostPort,
            })),
          },
        ],
      },
      name,
    );
  const fail = ['Unschedulable', "node(s) didn't have free ports for the requested pod ports"];
  const cases: {
    name: string;
    pod: [string, string, number][];
    existing: [string, string, number][];
    want: string[];
  }[] = [
    { name: 'nothing running', pod: [['UDP', '127.0.0.1', 8080]], existing: [], want: ['Success'] },
    {
      name: 'other port',
      pod: [['UDP', '127.0.0.1', 8080]],
      existing: [['UDP', '127.0.0.1', 9090]],
      want: ['Success'],
    },
    { name: 'same udp port', pod: [['UDP', '127.0.0.1', 8080]], existing: [['UDP', '127.0.0.1', 8080]], want: fail },
    { name: 'same tcp port', pod: [['TCP', '127.0.0.1', 8080]], existing: [['TCP', '127.0.0.1', 8080]], want: fail },
    {
      name: 'different host ip',
      pod: [['TCP', '127.0.0.1', 8080]],
      existing: [['TCP', '127.0.0.2', 8080]],
      want: ['Success'],
    },
    {
      name: 'different protocol',
      pod: [['UDP', '127.0.0.1', 8080]],
      existing: [['TCP', '127.0.0.1', 8080]],
      want: ['Success'],
    },
    {
      name: 'second udp port conflict',
      pod: [
        ['UDP', '127.0.0.1', 8000],
        ['UDP', '127.0.0.1', 8080],
      ],
      existing: [
        ['UDP', '127.0.0.1', 8001],
        ['UDP', '127.0.0.1', 8080],
      ],
      want: fail,
    },
    {
      name: 'first tcp port conflict due to 0.0.0.0 hostIP',
      pod: [
        ['TCP', '0.0.0.0', 8001],
        ['UDP', '127.0.0.1', 8080],
      ],
      existing: [['TCP', '127.0.0.1', 8001]],
      want: fail,
    },
    {
      name: 'TCP hostPort conflict due to 0.0.0.0 hostIP',
      pod: [
        ['TCP', '10.0.10.10', 8001],
        ['TCP', '0.0.0.0', 8001],
      ],
      existing: [['TCP', '127.0.0.1', 8001]],
      want: fail,
    },
    {
      name: 'second tcp port conflict to 0.0.0.0 hostIP',
      pod: [['TCP', '127.0.0.1', 8001]],
      existing: [['TCP', '0.0.0.0', 8001]],
      want: fail,
    },
    {
      name: 'second different protocol',
      pod: [['UDP', '127.0.0.1', 8001]],
      existing: [['TCP', '0.0.0.0', 8001]],
      want: ['Success'],
    },
    {
      name: 'UDP hostPort conflict due to 0.0.0.0 hostIP',
      pod: [['UDP', '127.0.0.1', 8001]],
      existing: [
        ['TCP', '0.0.0.0', 8001],
        ['UDP', '0.0.0.0', 8001],
      ],
      want: fail,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const existing = withPorts('existing', c.existing);
      assert.deepEqual(run(new NodePortsPlugin(), withPorts('p', c.pod), makeNode('n'), [existing]), c.want);
    });
  }
  it('a pod without host ports is skipped', () => {
    assert.deepEqual(run(new NodePortsPlugin(), makePod('p'), makeNode('n')), ['Skip']);
  });
});
