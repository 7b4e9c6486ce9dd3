// PodTopologySpread: upstream's table tests (plugins/podtopologyspread filtering_test.go TestSingleConstraint,
// TestMultipleConstraints; scoring_test.go TestPodTopologySpreadScore), case names kept. Upstream's nodes carry
// the labels the case names ("zone", "node"); ours also carry kubernetes.io/hostname as the kubelet sets it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import type {
  LabelSelector,
  Node,
  Pod,
  ReplicaSet,
  ReplicationController,
  Service,
  StatefulSet,
  Taint,
  TopologySpreadConstraint,
} from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import type { NodeScore } from '../../src/framework/interfaces.ts';
import { defaultSelector, storeSelectorLister } from '../../src/plugins/default-selector.ts';
import {
  ERR_REASON_CONSTRAINTS_NOT_MATCH,
  ERR_REASON_NODE_LABEL_NOT_MATCH,
  PodTopologySpreadPlugin,
} from '../../src/plugins/pod-topology-spread.ts';
import { makeNode, makePod } from '../helpers/objects.ts';

const foo: LabelSelector = { matchExpressions: [{ key: 'foo', operator: 'Exists' }] };
const bar: LabelSelector = { matchExpressions: [{ key: 'bar', operator: 'Exists' }] };
const UNSCHEDULABLE_TAINT: Taint = { key: 'node.kubernetes.io/unschedulable', value: '', effect: 'NoSchedule' };

type Extra = Partial<Omit<TopologySpreadConstraint, 'maxSkew' | 'topologyKey' | 'whenUnsatisfiable'>>;
const hard = (
  maxSkew: number,
  key: string,
  sel: LabelSelector | null,
  extra: Extra = {},
): TopologySpreadConstraint => ({
  maxSkew,
  topologyKey: key,
  whenUnsatisfiable: 'DoNotSchedule',
  labelSelector: sel,
  ...extra,
});
const soft = (
  maxSkew: number,
  key: string,
  sel: LabelSelector | null,
  extra: Extra = {},
): TopologySpreadConstraint => ({
  ...hard(maxSkew, key, sel, extra),
  whenUnsatisfiable: 'ScheduleAnyway',
});
/** "foo bar" → { foo: '', bar: '' } (upstream's Label("foo", "")). */
const flags = (s: string): Record<string, string> =>
  Object.fromEntries(
    s
      .split(' ')
      .filter(Boolean)
      .map((k) => [k, '']),
  );

function incoming(labels: string, constraints: TopologySpreadConstraint[], spec: Partial<Pod['spec']> = {}): Pod {
  const p = makePod('p', { labels: flags(labels) });
  return { ...p, spec: { ...p.spec, ...spec, topologySpreadConstraints: constraints } };
}

/** `node(name, {zone: 'zone1', node: name})`; `taints` as upstream's Taints(). */
function node(name: string, labels: Record<string, string>, taints?: Taint[]): Node {
  const n = makeNode(name, { labels });
  return taints ? { ...n, spec: { taints } } : n;
}
/** Upstream's four nodes: node-a, node-b in zone1, node-x, node-y in zone2, each with label node=<name>. */
const FOUR = ['node-a', 'node-b', 'node-x', 'node-y'].map((n, i) =>
  node(n, { zone: i < 2 ? 'zone1' : 'zone2', node: n }),
);
const byHost = (...names: string[]) => names.map((n) => node(n, { node: n }));

/** `count` existing pods on `nodeName` labelled `labels` (upstream's p-a1, p-a2, ...). */
function on(nodeName: string, count: number, labels = 'foo', o: { namespace?: string; terminating?: boolean } = {}) {
  return Array.from({ length: count }, (_, i) => {
    const p = makePod(`p-${nodeName}-${labels.replace(' ', '-')}-${i}`, {
      nodeName,
      labels: flags(labels),
      namespace: o.namespace,
    });
    return o.terminating ? { ...p, metadata: { ...p.metadata, deletionTimestamp: '2024-01-01T00:00:00Z' } } : p;
  });
}

function snapshot(nodes: Node[], pods: Pod[]) {
  const infos = nodes.map((n) =>
    newNodeInfo(
      n,
      pods.filter((p) => p.spec.nodeName === n.metadata.name),
    ),
  );
  return { infos, plugin: new PodTopologySpreadPlugin({ list: () => infos }) };
}

/** preFilter over every node, then the filter's code per node (Skip counts as Success, as the framework runs it). */
function filter(pod: Pod, nodes: Node[], pods: Pod[]): Record<string, string> {
  const { infos, plugin } = snapshot(nodes, pods);
  const state = new CycleState();
  const pre = plugin.preFilter(state, pod);
  return Object.fromEntries(
    infos.map((i) => [i.name, pre.code === 'Skip' ? 'Success' : plugin.filter(state, pod, i).code]),
  );
}

/** PreScore over the candidates (`nodes`), every node of the cluster (`nodes` and `failed`) listed. */
function score(pod: Pod, nodes: Node[], pods: Pod[], failed: Node[] = []): Record<string, number> {
  const { infos, plugin } = snapshot([...nodes, ...failed], pods);
  const candidates = infos.slice(0, nodes.length);
  const state = new CycleState();
  if (plugin.preScore(state, pod, candidates).code === 'Skip') return {};
  const list: NodeScore[] = candidates.map((i) => ({ name: i.name, score: plugin.score(state, pod, i) }));
  plugin.normalizeScore(state, pod, list);
  return Object.fromEntries(list.map((s) => [s.name, s.score]));
}

const S = 'Success';
const U = 'Unschedulable';
const UU = 'UnschedulableAndUnresolvable';
const codes = (a: string, b: string, x: string, y: string) => ({ 'node-a': a, 'node-b': b, 'node-x': x, 'node-y': y });

describe('PodTopologySpread filter, one constraint (TestSingleConstraint)', () => {
  const cases: { name: string; pod: Pod; nodes?: Node[]; pods?: Pod[]; want: Record<string, string> }[] = [
    { name: 'no existing pods', pod: incoming('foo', [hard(1, 'zone', foo)]), want: codes(S, S, S, S) },
    {
      name: "no existing pods, incoming pod doesn't match itself",
      pod: incoming('foo', [hard(1, 'zone', bar)]),
      want: codes(S, S, S, S),
    },
    {
      name: 'existing pods in a different namespace do not count',
      pod: incoming('foo', [hard(1, 'zone', foo)]),
      pods: [
        ...on('node-a', 1, 'foo', { namespace: 'ns1' }),
        ...on('node-a', 1, 'foo', { namespace: 'ns2' }),
        ...on('node-x', 1),
        ...on('node-y', 1),
      ],
      want: codes(S, S, U, U),
    },
    {
      name: 'existing pods do not match null selector',
      pod: incoming('foo', [hard(1, 'zone', null)]),
      pods: [...on('node-x', 1), ...on('node-y', 1)],
      want: codes(S, S, S, S),
    },
    {
      name: 'pods spread across zones as 3/3, all nodes fit',
      pod: incoming('foo', [hard(1, 'zone', foo)]),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-y', 3)],
      want: codes(S, S, S, S),
    },
    {
      name: "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
      pod: incoming('foo', [hard(1, 'zone', foo)]),
      nodes: [
        node('node-a', { zone: 'zone1', node: 'node-a' }),
        node('node-b', { zon: 'zone1', node: 'node-b' }),
        node('node-x', { zone: 'zone2', node: 'node-x' }),
        node('node-y', { zone: 'zone2', node: 'node-y' }),
      ],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-x', 1), ...on('node-y', 1)],
      want: codes(S, UU, U, U),
    },
    {
      name: "pod cannot be scheduled as all nodes don't have label 'rack'",
      pod: incoming('foo', [hard(1, 'rack', foo)]),
      nodes: [FOUR[0], FOUR[2]],
      want: { 'node-a': UU, 'node-x': UU },
    },
    {
      name: 'pods spread across nodes as 2/1/0/3, only node-x fits',
      pod: incoming('foo', [hard(1, 'node', foo)]),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-y', 3)],
      want: codes(U, U, S, U),
    },
    {
      name: 'pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit',
      pod: incoming('foo', [hard(2, 'node', foo)]),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-y', 3)],
      want: codes(U, S, S, U),
    },
    {
      name: "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
      pod: incoming('bar', [hard(1, 'node', foo)]),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-y', 3)],
      want: codes(U, S, S, U),
    },
    {
      // Only node-a and node-y count (2/~1~/~0~/3); NodeAffinity's own filter is not run here.
      name: 'incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits',
      pod: incoming('foo', [hard(1, 'node', foo)], {
        affinity: nodeAffinityIn('node', ['node-a', 'node-y']),
      }),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-y', 3)],
      want: codes(S, S, S, U),
    },
    {
      name: 'terminating Pods should be excluded',
      pod: incoming('foo', [hard(1, 'node', foo)]),
      nodes: byHost('node-a', 'node-b'),
      pods: [...on('node-a', 1, 'foo', { terminating: true }), ...on('node-b', 1)],
      want: { 'node-a': S, 'node-b': U },
    },
    {
      name: 'incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits',
      pod: incoming('foo', [hard(1, 'zone', foo)], {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchExpressions: [{ key: 'node', operator: 'NotIn', values: ['node-b'] }] }],
            },
          },
        },
      }),
      pods: [...on('node-b', 2), ...on('node-y', 1)],
      want: codes(S, S, U, U),
    },
    {
      name: 'pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits',
      pod: incoming('foo', [hard(2, 'node', foo, { minDomains: 4 })]),
      nodes: byHost('node-a', 'node-b', 'node-c'),
      pods: [...on('node-a', 2), ...on('node-b', 2), ...on('node-c', 1)],
      want: { 'node-a': U, 'node-b': U, 'node-c': S },
    },
    {
      name: 'pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the all nodes fit',
      pod: incoming('foo', [hard(2, 'node', foo, { minDomains: 2 })]),
      nodes: byHost('node-a', 'node-b', 'node-c'),
      pods: [...on('node-a', 2), ...on('node-b', 2), ...on('node-c', 1)],
      want: { 'node-a': S, 'node-b': S, 'node-c': S },
    },
    {
      name: 'pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third and fourth nodes fit',
      pod: incoming('foo', [hard(2, 'zone', foo, { minDomains: 3 })]),
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, U, S, S),
    },
    {
      name: 'pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all nodes fit',
      pod: incoming('foo', [hard(2, 'zone', foo, { minDomains: 1 })]),
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(S, S, S, S),
    },
    {
      name: 'NodeAffinityPolicy honored with labelSelectors',
      pod: incoming('foo', [hard(1, 'node', foo)], { nodeSelector: { foo: '' } }),
      nodes: [
        ...['node-a', 'node-b', 'node-x'].map((n) => node(n, { node: n, foo: '' })),
        node('node-y', { node: 'node-y' }),
      ],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, U, S, S),
    },
    {
      name: 'NodeAffinityPolicy ignored with labelSelectors',
      pod: incoming('foo', [hard(1, 'node', foo, { nodeAffinityPolicy: 'Ignore' })], { nodeSelector: { foo: '' } }),
      nodes: [
        ...['node-a', 'node-b', 'node-x'].map((n) => node(n, { node: n, foo: '' })),
        node('node-y', { node: 'node-y' }),
      ],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, U, S, U),
    },
    {
      name: 'NodeAffinityPolicy honored with nodeAffinity',
      pod: incoming('foo', [hard(1, 'node', foo)], { affinity: nodeAffinityIn('foo', ['']) }),
      nodes: [
        ...['node-a', 'node-b', 'node-x'].map((n) => node(n, { node: n, foo: '' })),
        node('node-y', { node: 'node-y' }),
      ],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, U, S, S),
    },
    {
      name: 'NodeAffinityPolicy ignored with nodeAffinity',
      pod: incoming('foo', [hard(1, 'node', foo, { nodeAffinityPolicy: 'Ignore' })], {
        affinity: nodeAffinityIn('foo', ['']),
      }),
      nodes: [
        ...['node-a', 'node-b', 'node-x'].map((n) => node(n, { node: n, foo: '' })),
        node('node-y', { node: 'node-y' }),
      ],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, U, S, U),
    },
    {
      name: 'NodeTaintsPolicy honored',
      pod: incoming('foo', [hard(1, 'node', foo, { nodeTaintsPolicy: 'Honor' })]),
      nodes: [...byHost('node-a', 'node-b', 'node-x'), node('node-y', { node: 'node-y' }, [UNSCHEDULABLE_TAINT])],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, U, S, S),
    },
    {
      name: 'NodeTaintsPolicy ignored',
      pod: incoming('foo', [hard(1, 'node', foo)]),
      nodes: [...byHost('node-a', 'node-b', 'node-x'), node('node-y', { node: 'node-y' }, [UNSCHEDULABLE_TAINT])],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, U, S, U),
    },
    {
      // v1.35's countPodsMatchSelector counts nothing for a selector without requirements (kubernetes#141339):
      // 0 everywhere plus the pod itself is a skew of 1, so `{}` never rejects. Checked against kube-scheduler in
      // test/e2e/explain-vs-kube-scheduler.test.ts.
      name: 'an empty (non-null) labelSelector counts no existing pods',
      pod: incoming('foo', [hard(1, 'node', {})]),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-y', 3)],
      want: codes(S, S, S, S),
    },
    {
      // filterTopologySpreadConstraints adds the pod's own values of matchLabelKeys to the selector.
      name: 'matchLabelKeys narrow the selector to pods with the same values',
      pod: incoming('foo rev', [hard(1, 'node', foo, { matchLabelKeys: ['rev'] })]),
      pods: [...on('node-a', 2), ...on('node-b', 1, 'foo rev'), ...on('node-y', 1, 'foo rev')],
      want: codes(S, U, S, U),
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(filter(c.pod, c.nodes ?? FOUR, c.pods ?? []), c.want));

  it('reasons: a missing topology label is unresolvable, a skew too large is not', () => {
    const nodes = [node('node-a', { zone: 'zone1' }), node('node-b', {})];
    const { infos, plugin } = snapshot(nodes, on('node-a', 1));
    const pod = incoming('foo', [hard(1, 'zone', foo)]);
    const state = new CycleState();
    plugin.preFilter(state, pod);
    assert.deepEqual(plugin.filter(state, pod, infos[1]).reasons, [ERR_REASON_NODE_LABEL_NOT_MATCH]);
    const crowded = snapshot([node('node-a', { node: 'a' }), node('node-b', { node: 'b' })], on('node-a', 1));
    const pod2 = incoming('foo', [hard(1, 'node', foo)]);
    const state2 = new CycleState();
    crowded.plugin.preFilter(state2, pod2);
    assert.deepEqual(crowded.plugin.filter(state2, pod2, crowded.infos[0]).reasons, [ERR_REASON_CONSTRAINTS_NOT_MATCH]);
    assert.equal(
      ERR_REASON_NODE_LABEL_NOT_MATCH,
      "node(s) didn't match pod topology spread constraints (missing required label)",
    );
  });

  it('a pod with only ScheduleAnyway constraints (as the system defaults are) is skipped by the filter', () => {
    const { plugin } = snapshot(FOUR, []);
    const pod = incoming('foo', [soft(3, 'kubernetes.io/hostname', foo), soft(5, 'topology.kubernetes.io/zone', foo)]);
    assert.equal(plugin.preFilter(new CycleState(), pod).code, 'Skip');
  });
});

function nodeAffinityIn(key: string, values: string[]): Pod['spec']['affinity'] {
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'In', values }] }],
      },
    },
  };
}

describe('PodTopologySpread filter, several constraints (TestMultipleConstraints)', () => {
  const cases: { name: string; pod: Pod; nodes?: Node[]; pods: Pod[]; want: Record<string, string> }[] = [
    {
      name: 'two Constraints on zone and node, spreads = [3/3, 2/1/0/3]',
      pod: incoming('foo', [hard(1, 'zone', foo), hard(1, 'node', foo)]),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-y', 3)],
      want: codes(U, U, S, U),
    },
    {
      name: 'two Constraints on zone and node, spreads = [3/4, 2/1/0/4]',
      pod: incoming('foo', [hard(1, 'zone', foo), hard(1, 'node', foo)]),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-y', 4)],
      want: codes(U, U, U, U),
    },
    {
      name: 'Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]',
      pod: incoming('foo bar', [hard(1, 'zone', foo), hard(1, 'node', bar)]),
      pods: [...on('node-a', 1, 'foo'), ...on('node-y', 1, 'bar')],
      want: codes(U, U, S, U),
    },
    {
      name: 'Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]',
      pod: incoming('foo bar', [hard(1, 'zone', foo), hard(1, 'node', bar)]),
      pods: [...on('node-a', 1, 'foo'), ...on('node-x', 1, 'bar'), ...on('node-y', 1, 'bar')],
      want: codes(U, U, U, U),
    },
    {
      name: 'Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]',
      pod: incoming('foo bar', [hard(1, 'zone', foo), hard(1, 'node', bar)]),
      pods: [
        ...on('node-a', 1, 'foo'),
        ...on('node-a', 1, 'foo bar'),
        ...on('node-y', 2, 'foo'),
        ...on('node-y', 1, 'foo bar'),
      ],
      want: codes(U, S, U, U),
    },
    {
      name: "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
      pod: incoming('bar', [hard(1, 'zone', foo), hard(1, 'node', bar)]),
      pods: [...on('node-a', 1, 'foo'), ...on('node-x', 1, 'bar'), ...on('node-y', 1, 'bar')],
      want: codes(S, S, U, U),
    },
    {
      name: "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
      pod: incoming('foo', [hard(1, 'zone', foo), hard(1, 'node', foo)]),
      nodes: [FOUR[0], FOUR[1], node('node-x', { zone: 'zone2' }), FOUR[3]],
      pods: [...on('node-a', 1), ...on('node-y', 1)],
      want: codes(U, S, UU, U),
    },
    {
      name: 'two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore',
      pod: incoming('foo', [hard(1, 'zone', foo), hard(1, 'node', foo, { nodeAffinityPolicy: 'Ignore' })], {
        nodeSelector: { foo: '' },
      }),
      nodes: [
        node('node-a', { zone: 'zone1', node: 'node-a', foo: '' }),
        node('node-b', { zone: 'zone1', node: 'node-b', foo: '' }),
        node('node-x', { zone: 'zone2', node: 'node-x', foo: '' }),
        node('node-y', { zone: 'zone2', node: 'node-y' }),
      ],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, U, S, U),
    },
    {
      name: 'two node inclusion Constraints, zone: honor/honor, node: honor/ignore',
      pod: incoming('foo', [hard(1, 'zone', foo, { nodeTaintsPolicy: 'Honor' }), hard(1, 'node', foo)]),
      nodes: [
        node('node-a', { zone: 'zone1', node: 'node-a', foo: '' }),
        node('node-b', { zone: 'zone1', node: 'node-b', foo: '' }),
        node('node-x', { zone: 'zone2', node: 'node-x', foo: '' }),
        node('node-y', { zone: 'zone2', node: 'node-y' }, [UNSCHEDULABLE_TAINT]),
      ],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, U, S, U),
    },
    {
      name: 'two node inclusion Constraints, zone: honor/ignore, node: honor/ignore',
      pod: incoming('foo', [hard(1, 'zone', foo), hard(1, 'node', foo)], { nodeSelector: { foo: '' } }),
      nodes: [
        node('node-a', { zone: 'zone1', node: 'node-a', foo: '' }),
        node('node-b', { zone: 'zone1', node: 'node-b' }),
        node('node-x', { zone: 'zone2', node: 'node-x', foo: '' }),
        node('node-y', { zone: 'zone2', node: 'node-y', foo: '' }, [UNSCHEDULABLE_TAINT]),
      ],
      pods: [...on('node-a', 1), ...on('node-b', 1), ...on('node-y', 1)],
      want: codes(U, S, S, U),
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(filter(c.pod, c.nodes ?? FOUR, c.pods), c.want));
});

describe('PodTopologySpread score (TestPodTopologySpreadScore)', () => {
  const H = 'kubernetes.io/hostname';
  const hosts = (...names: string[]) => names.map((n) => makeNode(n));
  const zoned = (...specs: [string, string][]) => specs.map(([n, zone]) => node(n, { zone }));
  const cases: {
    name: string;
    pod: Pod;
    nodes: Node[];
    failed?: Node[];
    pods?: Pod[];
    want: Record<string, number>;
  }[] = [
    {
      name: 'one constraint on node, no existing pods',
      pod: incoming('foo', [soft(1, H, foo)]),
      nodes: hosts('node-a', 'node-b'),
      want: { 'node-a': 100, 'node-b': 100 },
    },
    {
      name: 'one constraint on node, only one node is candidate',
      pod: incoming('foo', [soft(1, H, foo)]),
      nodes: hosts('node-a'),
      failed: hosts('node-b'),
      pods: [...on('node-a', 2), ...on('node-b', 1)],
      want: { 'node-a': 100 },
    },
    {
      name: 'one constraint on node, all nodes have the same number of matching pods',
      pod: incoming('foo', [soft(1, H, foo)]),
      nodes: hosts('node-a', 'node-b'),
      pods: [...on('node-a', 1), ...on('node-b', 1)],
      want: { 'node-a': 100, 'node-b': 100 },
    },
    {
      name: 'one constraint on node, all 4 nodes are candidates',
      pod: incoming('foo', [soft(1, H, foo)]),
      nodes: hosts('node-a', 'node-b', 'node-c', 'node-d'),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-d', 3)],
      want: { 'node-a': 20, 'node-b': 60, 'node-c': 100, 'node-d': 0 },
    },
    {
      name: 'one constraint on node, null selector',
      pod: incoming('foo', [soft(1, H, null)]),
      nodes: hosts('node-a', 'node-b', 'node-c', 'node-d'),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-d', 3)],
      want: { 'node-a': 100, 'node-b': 100, 'node-c': 100, 'node-d': 100 },
    },
    {
      name: 'one constraint on node, all 4 nodes are candidates, maxSkew=2',
      pod: incoming('foo', [soft(2, H, foo)]),
      nodes: hosts('node-a', 'node-b', 'node-c', 'node-d'),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-d', 3)],
      want: { 'node-a': 33, 'node-b': 66, 'node-c': 100, 'node-d': 16 },
    },
    {
      name: 'one constraint on node, all 4 nodes are candidates, maxSkew=3',
      pod: incoming('foo', [soft(3, H, foo)]),
      nodes: hosts('node-a', 'node-b', 'node-c', 'node-d'),
      pods: [...on('node-a', 4), ...on('node-b', 3), ...on('node-c', 2), ...on('node-d', 1)],
      want: { 'node-a': 44, 'node-b': 66, 'node-c': 77, 'node-d': 100 },
    },
    {
      name: 'one constraint on node, 3 out of 4 nodes are candidates',
      pod: incoming('foo', [soft(1, H, foo)]),
      nodes: hosts('node-a', 'node-b', 'node-x'),
      failed: hosts('node-y'),
      pods: [...on('node-a', 4), ...on('node-b', 2), ...on('node-x', 1), ...on('node-y', 3)],
      want: { 'node-a': 33, 'node-b': 83, 'node-x': 100 },
    },
    {
      name: "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
      pod: incoming('foo', [soft(1, H, foo)]),
      nodes: [
        makeNode('node-a'),
        { ...makeNode('node-b'), metadata: { ...makeNode('node-b').metadata, labels: { n: 'node-b' } } },
        makeNode('node-x'),
      ],
      failed: hosts('node-y'),
      pods: [...on('node-a', 4), ...on('node-b', 2), ...on('node-x', 1), ...on('node-y', 3)],
      want: { 'node-a': 16, 'node-b': 0, 'node-x': 100 },
    },
    {
      name: 'one constraint on zone, 3 out of 4 nodes are candidates',
      pod: incoming('foo', [soft(1, 'zone', foo)]),
      nodes: zoned(['node-a', 'zone1'], ['node-b', 'zone1'], ['node-x', 'zone2']),
      failed: zoned(['node-y', 'zone2']),
      pods: [...on('node-a', 4), ...on('node-b', 2), ...on('node-x', 1), ...on('node-y', 3)],
      want: { 'node-a': 75, 'node-b': 75, 'node-x': 100 },
    },
    {
      name: 'two Constraints on zone and node, 2 out of 4 nodes are candidates',
      pod: incoming('foo', [soft(1, 'zone', foo), soft(1, H, foo)]),
      nodes: zoned(['node-a', 'zone1'], ['node-x', 'zone2']),
      failed: zoned(['node-b', 'zone1'], ['node-y', 'zone2']),
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-x', 2), ...on('node-y', 4)],
      want: { 'node-a': 100, 'node-x': 63 },
    },
    {
      name: 'two Constraints on zone, 2 out of 4 nodes are candidates',
      pod: incoming('foo bar', [soft(1, 'zone', foo), soft(1, 'zone', bar)]),
      nodes: zoned(['node-a', 'zone1'], ['node-x', 'zone2']),
      failed: zoned(['node-b', 'zone1'], ['node-y', 'zone2']),
      pods: [
        ...on('node-a', 1, 'foo bar'),
        ...on('node-a', 1, 'foo'),
        ...on('node-b', 1, 'foo bar'),
        ...on('node-y', 2, 'foo'),
        ...on('node-y', 1, 'foo bar'),
      ],
      want: { 'node-a': 85, 'node-x': 100 },
    },
    {
      name: 'two Constraints on zone and node, with different labelSelectors',
      pod: incoming('foo bar', [soft(1, 'zone', foo), soft(1, H, bar)]),
      nodes: zoned(['node-a', 'zone1'], ['node-b', 'zone1'], ['node-x', 'zone2'], ['node-y', 'zone2']),
      pods: [
        ...on('node-a', 1, 'foo'),
        ...on('node-b', 1, 'foo bar'),
        ...on('node-y', 1, 'foo'),
        ...on('node-y', 1, 'bar'),
      ],
      want: { 'node-a': 60, 'node-b': 20, 'node-x': 100, 'node-y': 60 },
    },
    {
      name: 'two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods',
      pod: incoming('foo bar', [soft(1, 'zone', foo), soft(1, H, bar)]),
      nodes: zoned(['node-a', 'zone1'], ['node-b', 'zone1'], ['node-x', 'zone2'], ['node-y', 'zone2']),
      pods: [...on('node-b', 1, 'bar'), ...on('node-x', 1, 'foo'), ...on('node-y', 1, 'foo bar')],
      want: { 'node-a': 100, 'node-b': 60, 'node-x': 40, 'node-y': 0 },
    },
    {
      name: 'two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates',
      pod: incoming('foo bar', [soft(1, 'zone', foo), soft(1, H, bar)]),
      nodes: zoned(['node-a', 'zone1'], ['node-b', 'zone1'], ['node-x', 'zone2']),
      failed: zoned(['node-y', 'zone2']),
      pods: [
        ...on('node-a', 1, 'foo'),
        ...on('node-b', 1, 'foo bar'),
        ...on('node-y', 1, 'foo'),
        ...on('node-y', 1, 'bar'),
      ],
      want: { 'node-a': 50, 'node-b': 25, 'node-x': 100 },
    },
    {
      name: 'existing pods in a different namespace do not count',
      pod: incoming('foo', [soft(1, H, foo)]),
      nodes: hosts('node-a', 'node-b'),
      pods: [...on('node-a', 1, 'foo', { namespace: 'ns1' }), ...on('node-a', 1), ...on('node-b', 2)],
      want: { 'node-a': 100, 'node-b': 33 },
    },
    {
      name: 'terminating Pods should be excluded',
      pod: incoming('foo', [soft(1, H, foo)]),
      nodes: hosts('node-a', 'node-b'),
      pods: [...on('node-a', 1, 'foo', { terminating: true }), ...on('node-b', 1)],
      want: { 'node-a': 100, 'node-b': 0 },
    },
    {
      name: 'minDomains has no effect when ScheduleAnyway',
      pod: incoming('foo', [soft(2, 'node', foo, { minDomains: 10 })]),
      nodes: byHost('node-a', 'node-b', 'node-c'),
      pods: [...on('node-a', 2), ...on('node-b', 2), ...on('node-c', 1)],
      want: { 'node-a': 75, 'node-b': 75, 'node-c': 100 },
    },
    {
      name: 'NodeAffinityPolicy honoed with labelSelectors',
      pod: incoming('foo', [soft(1, 'node', foo)], { nodeSelector: { foo: '' } }),
      nodes: [
        node('node-a', { node: 'node-a', foo: '' }),
        node('node-b', { node: 'node-b', foo: '' }),
        node('node-c', { node: 'node-c' }),
      ],
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-c', 1)],
      want: { 'node-a': 0, 'node-b': 33, 'node-c': 100 },
    },
    {
      name: 'NodeAffinityPolicy ignored with labelSelectors',
      pod: incoming('foo', [soft(1, 'node', foo, { nodeAffinityPolicy: 'Ignore' })], { nodeSelector: { foo: '' } }),
      nodes: [
        node('node-a', { node: 'node-a', foo: '' }),
        node('node-b', { node: 'node-b', foo: '' }),
        node('node-c', { node: 'node-c' }),
      ],
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-c', 1)],
      want: { 'node-a': 66, 'node-b': 100, 'node-c': 100 },
    },
    {
      name: 'NodeTaintsPolicy honored',
      pod: incoming('foo', [soft(1, 'node', foo, { nodeTaintsPolicy: 'Honor' })]),
      nodes: [...byHost('node-a', 'node-b'), node('node-c', { node: 'node-c' }, [UNSCHEDULABLE_TAINT])],
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-c', 1)],
      want: { 'node-a': 0, 'node-b': 33, 'node-c': 100 },
    },
    {
      name: 'NodeTaintsPolicy ignored',
      pod: incoming('foo', [soft(1, 'node', foo)]),
      nodes: [...byHost('node-a', 'node-b'), node('node-c', { node: 'node-c' }, [UNSCHEDULABLE_TAINT])],
      pods: [...on('node-a', 2), ...on('node-b', 1), ...on('node-c', 1)],
      want: { 'node-a': 66, 'node-b': 100, 'node-c': 100 },
    },
    {
      name: 'matchLabelKeys ANDed with LabelSelector when LabelSelector is empty',
      pod: incoming('foo bar', [
        soft(1, 'zone', {}, { matchLabelKeys: ['foo'] }),
        soft(1, H, {}, { matchLabelKeys: ['bar'] }),
      ]),
      nodes: zoned(['node-a', 'zone1'], ['node-b', 'zone1'], ['node-c', 'zone2'], ['node-d', 'zone2']),
      pods: [
        ...on('node-a', 1, 'foo'),
        ...on('node-b', 1, 'foo bar'),
        ...on('node-c', 1, 'foo'),
        ...on('node-c', 1, 'bar'),
      ],
      want: { 'node-a': 60, 'node-b': 20, 'node-c': 60, 'node-d': 100 },
    },
    {
      name: "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
      pod: incoming('foo bar baz', [soft(1, 'zone', foo), soft(1, H, bar, { matchLabelKeys: ['baz'] })]),
      nodes: zoned(['node-a', 'zone1'], ['node-b', 'zone1'], ['node-c', 'zone2'], ['node-d', 'zone2']),
      pods: [
        ...on('node-a', 1, 'foo'),
        ...on('node-b', 1, 'foo bar baz'),
        ...on('node-c', 1, 'foo'),
        ...on('node-c', 1, 'bar'),
        ...on('node-c', 1, 'bar baz'),
      ],
      want: { 'node-a': 60, 'node-b': 20, 'node-c': 60, 'node-d': 100 },
    },
    {
      // As in the filter: `{}` counts nothing (v1.35), so every node scores the same.
      name: 'an empty (non-null) labelSelector counts no existing pods',
      pod: incoming('foo', [soft(1, H, {})]),
      nodes: hosts('node-a', 'node-b', 'node-c'),
      pods: [...on('node-a', 2), ...on('node-b', 1)],
      want: { 'node-a': 100, 'node-b': 100, 'node-c': 100 },
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(score(c.pod, c.nodes, c.pods ?? [], c.failed), c.want));

  it('a pod without spread constraints is not scored (no default constraints without the Services and workloads selecting it)', () => {
    assert.deepEqual(score(makePod('p', { labels: { foo: '' } }), hosts('node-a', 'node-b'), on('node-a', 3)), {});
  });
});

// kube-scheduler's defaultingType System (its default): a pod without constraints spreads ScheduleAnyway by hostname
// (maxSkew 3) and zone (maxSkew 5) over the pods its Services and controller select (helper.DefaultSelector).
// Upstream's cases from scoring_test.go (TestPreScoreSkip, TestPreScoreStateEmptyNodes, TestPodTopologySpreadScore)
// under system defaulting, then the selector's own rules.
describe('PodTopologySpread system default constraints', () => {
  const H = 'kubernetes.io/hostname';
  const Z = 'topology.kubernetes.io/zone';
  const meta = (name: string, namespace = 'default') => ({ name, namespace, uid: `uid-${name}`, resourceVersion: '1' });
  const rs = (name: string, selector: LabelSelector, namespace?: string): ReplicaSet => ({
    metadata: meta(name, namespace),
    spec: { selector },
  });
  const service = (name: string, selector?: Record<string, string>, namespace?: string): Service => ({
    metadata: meta(name, namespace),
    spec: selector ? { selector } : {},
  });
  const ownedBy = (pod: Pod, kind: string, name: string, apiVersion = 'apps/v1', controller = true): Pod => ({
    ...pod,
    metadata: { ...pod.metadata, ownerReferences: [{ apiVersion, kind, name, uid: `uid-${name}`, controller }] },
  });
  const labelled = (labels: Record<string, string>) => makePod('p', { labels });
  type Workload = Service | ReplicationController | ReplicaSet | StatefulSet;
  function storeOf(objects: [kind: string, obj: Workload][]) {
    const store = new ClusterStore();
    for (const [kind, obj] of objects) store.upsert(kind as 'Service', obj as Service);
    return store;
  }
  function plugin(nodes: Node[], pods: Pod[], objects: [string, Workload][]) {
    const infos = nodes.map((n) =>
      newNodeInfo(
        n,
        pods.filter((p) => p.spec.nodeName === n.metadata.name),
      ),
    );
    return { infos, plugin: new PodTopologySpreadPlugin({ list: () => infos }, storeSelectorLister(storeOf(objects))) };
  }
  function preScoreState(pod: Pod, nodes: Node[], objects: [string, Workload][]) {
    const { infos, plugin: p } = plugin(nodes, [], objects);
    const state = new CycleState();
    const code = p.preScore(state, pod, infos).code;
    return { code, state: state.read<Record<string, unknown>>('PreScorePodTopologySpread') };
  }
  function scores(pod: Pod, nodes: Node[], pods: Pod[], objects: [string, Workload][]) {
    const { infos, plugin: p } = plugin(nodes, pods, objects);
    const state = new CycleState();
    if (p.preScore(state, pod, infos).code === 'Skip') return {};
    const list: NodeScore[] = infos.map((i) => ({ name: i.name, score: p.score(state, pod, i) }));
    p.normalizeScore(state, pod, list);
    return Object.fromEntries(list.map((s) => [s.name, s.score]));
  }
  const zonal = (name: string, zone?: string) => makeNode(name, zone ? { labels: { [Z]: zone } } : {});
  const fooPods = (nodeName: string, n: number) => on(nodeName, n, 'foo');
  const systemConstraint = (maxSkew: number, topologyKey: string, selector: LabelSelector) => ({
    maxSkew,
    topologyKey,
    selector,
    minDomains: 1,
    honorNodeAffinity: true,
    honorTaints: false,
  });

  it('system default constraints and a replicaset: hostname and zone, nodes without a zone counted as zone ""', () => {
    const pod = ownedBy(labelled({ foo: 'tar', baz: 'sup' }), 'ReplicaSet', 'rs1');
    const { code, state } = preScoreState(
      pod,
      [zonal('node-a', 'mars'), zonal('node-b', 'mars'), zonal('node-c'), zonal('node-d')],
      [['ReplicaSet', rs('rs1', foo)]],
    );
    assert.equal(code, 'Success');
    assert.deepEqual(state?.constraints, [systemConstraint(3, H, foo), systemConstraint(5, Z, foo)]);
    assert.deepEqual(state?.ignored, new Set());
    assert.deepEqual(state?.counts, [
      new Map(),
      new Map([
        ['mars', 0],
        ['', 0],
      ]),
    ]);
    assert.deepEqual(state?.weights, [Math.log(4 + 2), Math.log(2 + 2)]);
  });

  it("default constraints and a replicaset that doesn't match: a controller that does not exist gives no selector, so no scoring", () => {
    const pod = ownedBy(labelled({ foo: 'bar', baz: 'sup' }), 'ReplicaSet', 'rs2');
    const { code } = preScoreState(
      pod,
      [zonal('node-a', 'mars')],
      [['ReplicaSet', rs('rs1', { matchExpressions: [{ key: 'tar', operator: 'Exists' }] })]],
    );
    assert.equal(code, 'Skip');
  });

  it('default constraints and a replicaset, but pod has constraints: only its own ScheduleAnyway ones', () => {
    const pod = ownedBy(
      incoming('foo baz', [hard(1, 'zone', bar), soft(2, 'planet', { matchLabels: { baz: 'sup' } })]),
      'ReplicaSet',
      'rs1',
    );
    const { state } = preScoreState(
      pod,
      [makeNode('node-a', { labels: { planet: 'mars', galaxy: 'andromeda' } })],
      [['ReplicaSet', rs('rs1', foo)]],
    );
    assert.deepEqual(
      (state!.constraints as { topologyKey: string; maxSkew: number }[]).map((c) => [c.topologyKey, c.maxSkew]),
      [['planet', 2]],
    );
    assert.deepEqual(state?.counts, [new Map([['mars', 0]])]);
  });

  it("system defaulting, nodes don't have zone, pods match service: the same scores as one hostname constraint of maxSkew 3", () => {
    const nodes = ['node-a', 'node-b', 'node-c', 'node-d'].map((n) => zonal(n));
    const pods = [...fooPods('node-a', 4), ...fooPods('node-b', 3), ...fooPods('node-c', 2), ...fooPods('node-d', 1)];
    assert.deepEqual(scores(labelled({ foo: '' }), nodes, pods, [['Service', service('svc', { foo: '' })]]), {
      'node-a': 44,
      'node-b': 66,
      'node-c': 77,
      'node-d': 100,
    });
  });

  it('a node without a zone label is scored by hostname alone, not left out as a pod constraint would leave it', () => {
    const nodes = [zonal('node-a', 'z1'), zonal('node-b', 'z1'), zonal('node-c'), zonal('node-d')];
    const pods = [...fooPods('node-a', 2), ...fooPods('node-c', 1)];
    // hostname: 2/0/1/0 × ln 6 + 2; zone z1 holds 2, zone "" 1 (node-c, node-d get no zone term) × ln 4 + 4.
    assert.deepEqual(scores(labelled({ foo: '' }), nodes, pods, [['Service', service('svc', { foo: '' })]]), {
      'node-a': 16,
      'node-b': 41,
      'node-c': 83,
      'node-d': 100,
    });
    // The same constraints written on the pod require every key: the zone-less nodes score 0.
    const own = incoming('foo', [soft(3, H, { matchLabels: { foo: '' } }), soft(5, Z, { matchLabels: { foo: '' } })]);
    const withOwn = scores(own, nodes, pods, []);
    assert.equal(withOwn['node-c'], 0);
    assert.equal(withOwn['node-d'], 0);
  });

  it('a pod that no Service or controller selects gets no default constraints', () => {
    const nodes = [zonal('node-a', 'z1'), zonal('node-b', 'z2')];
    assert.deepEqual(
      scores(labelled({ foo: '' }), nodes, fooPods('node-a', 3), [['Service', service('other', { app: 'x' })]]),
      {},
    );
  });

  it('the filter is unchanged: the system defaults are ScheduleAnyway only', () => {
    const { infos, plugin: p } = plugin([zonal('node-a', 'z1')], fooPods('node-a', 9), [
      ['Service', service('svc', { foo: '' })],
    ]);
    assert.equal(p.preFilter(new CycleState(), labelled({ foo: '' })).code, 'Skip');
    assert.equal(infos.length, 1);
  });

  describe('the default selector (helper.DefaultSelector)', () => {
    const pod = labelled({ app: 'web', tier: 'front' });
    const selectorOf = (p: Pod, objects: [string, Workload][]) =>
      defaultSelector(p, storeSelectorLister(storeOf(objects)));

    it('merges the labels of every Service of the pod’s namespace that selects it', () => {
      assert.deepEqual(
        selectorOf(pod, [
          ['Service', service('web', { app: 'web' })],
          ['Service', service('front', { tier: 'front' })],
          ['Service', service('db', { app: 'db' })],
          ['Service', service('elsewhere', { app: 'web', zone: 'x' }, 'other')],
        ]),
        { matchLabels: { app: 'web', tier: 'front' } },
      );
    });

    it('a Service without a selector selects nothing; one with an empty selector selects every pod but adds no label', () => {
      assert.equal(selectorOf(pod, [['Service', service('headless')]]), undefined);
      assert.equal(selectorOf(pod, [['Service', service('all', {})]]), undefined);
    });

    it("adds a ReplicaSet's or StatefulSet's requirements (matchLabels as In) found by the controller reference's name", () => {
      const sel: LabelSelector = {
        matchLabels: { app: 'web' },
        matchExpressions: [{ key: 'tier', operator: 'Exists' }],
      };
      const want = {
        matchLabels: { app: 'web' },
        matchExpressions: [
          { key: 'app', operator: 'In', values: ['web'] },
          { key: 'tier', operator: 'Exists' },
        ],
      };
      const objects: [string, Workload][] = [
        ['Service', service('web', { app: 'web' })],
        ['ReplicaSet', rs('web-1', sel)],
        ['StatefulSet', { metadata: meta('web-ss'), spec: { selector: sel } }],
      ];
      assert.deepEqual(selectorOf(ownedBy(pod, 'ReplicaSet', 'web-1'), objects), want);
      assert.deepEqual(selectorOf(ownedBy(pod, 'StatefulSet', 'web-ss'), objects), want);
      // Found by name, whether or not its selector matches the pod: upstream does not check.
      assert.deepEqual(
        selectorOf(ownedBy(pod, 'ReplicaSet', 'other'), [['ReplicaSet', rs('other', { matchLabels: { app: 'db' } })]]),
        {
          matchExpressions: [{ key: 'app', operator: 'In', values: ['db'] }],
        },
      );
    });

    it("merges a ReplicationController's label map", () => {
      const rc: ReplicationController = { metadata: meta('legacy'), spec: { selector: { app: 'web', v: '1' } } };
      assert.deepEqual(
        selectorOf(ownedBy(pod, 'ReplicationController', 'legacy', 'v1'), [['ReplicationController', rc]]),
        {
          matchLabels: { app: 'web', v: '1' },
        },
      );
    });

    it('only the controller reference of a supported kind and API version counts', () => {
      const objects: [string, Workload][] = [['ReplicaSet', rs('web-1', { matchLabels: { app: 'web' } })]];
      assert.equal(selectorOf(ownedBy(pod, 'ReplicaSet', 'web-1', 'apps/v1', false), objects), undefined);
      assert.equal(selectorOf(ownedBy(pod, 'ReplicaSet', 'web-1', 'extensions/v1beta1'), objects), undefined);
      assert.equal(selectorOf(ownedBy(pod, 'Job', 'web-1', 'batch/v1'), objects), undefined);
      assert.equal(
        selectorOf(ownedBy(pod, 'ReplicaSet', 'web-1'), [
          ['ReplicaSet', rs('web-1', { matchLabels: { app: 'web' } }, 'other')],
        ]),
        undefined,
      );
    });

    it('a controller whose selector is empty or invalid adds no requirement', () => {
      assert.equal(selectorOf(ownedBy(pod, 'ReplicaSet', 'all'), [['ReplicaSet', rs('all', {})]]), undefined);
      const invalid = rs('bad', { matchExpressions: [{ key: 'app', operator: 'In', values: [] }] });
      assert.equal(selectorOf(ownedBy(pod, 'ReplicaSet', 'bad'), [['ReplicaSet', invalid]]), undefined);
    });
  });
});
