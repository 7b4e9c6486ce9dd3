// InterPodAffinity: upstream's table tests (plugins/interpodaffinity filtering_test.go TestRequiredAffinitySingleNode,
// TestRequiredAffinityMultipleNodes; scoring_test.go TestPreferredAffinity,
// TestPreferredAffinityWithHardPodAffinitySymmetricWeight), case names kept.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { LabelSelectorRequirement, Node, Pod, PodAffinityTerm } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import type { NodeScore } from '../../src/framework/interfaces.ts';
import {
  ERR_REASON_AFFINITY_RULES_NOT_MATCH,
  ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
  ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
  InterPodAffinityPlugin,
  namespaceNameLabel,
  storeNamespaceLabels,
} from '../../src/plugins/inter-pod-affinity.ts';
import { view } from './helpers.ts';

const n = (name: string, labels: Record<string, string>): Node => ({
  kind: 'Node',
  metadata: { name, uid: `uid-${name}`, resourceVersion: '1', labels },
});
const term = (topologyKey: string, ...matchExpressions: LabelSelectorRequirement[]): PodAffinityTerm => ({
  labelSelector: { matchExpressions },
  topologyKey,
});
const In = (key: string, ...values: string[]): LabelSelectorRequirement => ({ key, operator: 'In', values });
const NotIn = (key: string, ...values: string[]): LabelSelectorRequirement => ({ key, operator: 'NotIn', values });
const Exists = (key: string): LabelSelectorRequirement => ({ key, operator: 'Exists' });
const DoesNotExist = (key: string): LabelSelectorRequirement => ({ key, operator: 'DoesNotExist' });

interface PodOptions {
  node?: string;
  namespace?: string;
  labels?: Record<string, string>;
  affinity?: PodAffinityTerm[];
  anti?: PodAffinityTerm[];
  preferred?: [number, PodAffinityTerm][];
  preferredAnti?: [number, PodAffinityTerm][];
}
let uid = 0;
/** upstream's createPodWithAffinityTerms and st.MakePod().PodAffinityIn(...), as one options object. */
function p(o: PodOptions = {}): Pod {
  const weighted = (ts?: [number, PodAffinityTerm][]) =>
    ts?.map(([weight, podAffinityTerm]) => ({ weight, podAffinityTerm }));
  const affinity: NonNullable<Pod['spec']['affinity']> = {};
  if (o.affinity || o.preferred)
    affinity.podAffinity = {
      requiredDuringSchedulingIgnoredDuringExecution: o.affinity,
      preferredDuringSchedulingIgnoredDuringExecution: weighted(o.preferred),
    };
  if (o.anti || o.preferredAnti)
    affinity.podAntiAffinity = {
      requiredDuringSchedulingIgnoredDuringExecution: o.anti,
      preferredDuringSchedulingIgnoredDuringExecution: weighted(o.preferredAnti),
    };
  uid++;
  return {
    kind: 'Pod',
    metadata: {
      name: `p${uid}`,
      namespace: o.namespace ?? 'default',
      uid: `uid-${uid}`,
      resourceVersion: '1',
      labels: o.labels,
    },
    spec: { containers: [{ name: 'c' }], ...(o.node ? { nodeName: o.node } : {}), affinity },
  };
}

function cluster(nodes: Node[], pods: Pod[], hardPodAffinityWeight?: number) {
  const infos = nodes.map((node) =>
    newNodeInfo(
      node,
      pods.filter((x) => x.spec.nodeName === node.metadata.name),
    ),
  );
  return { infos, plugin: new InterPodAffinityPlugin({ list: () => infos }, hardPodAffinityWeight) };
}

/** Each node's filter status as [code, ...reasons]; a skipped preFilter passes every node. */
function filter(pod: Pod, nodes: Node[], pods: Pod[]): string[][] {
  const { infos, plugin } = cluster(nodes, pods);
  const state = new CycleState();
  const pre = plugin.preFilter(state, pod);
  return infos.map((i) => (pre.code === 'Skip' ? ['Success'] : view(plugin.filter(state, pod, i))));
}

/** Every node scored and normalized; a skipped preScore scores 0 everywhere (the framework's default). */
function score(pod: Pod, nodes: Node[], pods: Pod[], hardPodAffinityWeight?: number): Record<string, number> {
  const { infos, plugin } = cluster(nodes, pods, hardPodAffinityWeight);
  const state = new CycleState();
  if (plugin.preScore(state, pod, infos).code === 'Skip') return Object.fromEntries(infos.map((i) => [i.name, 0]));
  const list: NodeScore[] = infos.map((i) => ({ name: i.name, score: plugin.score(state, pod, i) }));
  plugin.normalizeScore(state, pod, list);
  return Object.fromEntries(list.map((s) => [s.name, s.score]));
}

const OK = ['Success'];
const AFFINITY = ['UnschedulableAndUnresolvable', ERR_REASON_AFFINITY_RULES_NOT_MATCH];
const ANTI = ['Unschedulable', ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH];
const EXISTING = ['Unschedulable', ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH];

describe('InterPodAffinity filter, one node (TestRequiredAffinitySingleNode)', () => {
  const node1 = n('machine1', { region: 'r1', zone: 'z11' });
  const scan = { service: 'securityscan' };
  const s1 = { security: 'S1' };
  const cases: { name: string; pod: Pod; pods?: Pod[]; want: string[] }[] = [
    {
      name: 'A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods',
      pod: p(),
      want: OK,
    },
    {
      name: 'satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod',
      pod: p({ labels: s1, affinity: [term('region', In('service', 'securityscan', 'value2'))] }),
      pods: [p({ node: 'machine1', labels: scan })],
      want: OK,
    },
    {
      name: 'satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod',
      pod: p({ labels: s1, affinity: [term('region', NotIn('service', 'securityscan3', 'value3'))] }),
      pods: [p({ node: 'machine1', labels: scan })],
      want: OK,
    },
    {
      name: 'Does not satisfy the PodAffinity with labelSelector because of diff Namespace',
      pod: p({
        labels: s1,
        affinity: [{ ...term('region', In('service', 'securityscan', 'value2')), namespaces: ['DiffNameSpace'] }],
      }),
      pods: [p({ node: 'machine1', labels: scan, namespace: 'ns' })],
      want: AFFINITY,
    },
    {
      name: "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
      pod: p({ labels: scan, affinity: [term('region', In('service', 'antivirusscan', 'value2'))] }),
      pods: [p({ node: 'machine1', labels: scan })],
      want: AFFINITY,
    },
    {
      name: 'satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ',
      pod: p({
        labels: s1,
        affinity: [
          term('region', Exists('service'), DoesNotExist('wrongkey')),
          term('region', In('service', 'securityscan'), NotIn('service', 'WrongValue')),
        ],
      }),
      pods: [p({ node: 'machine1', labels: scan })],
      want: OK,
    },
    {
      name: "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
      pod: p({
        labels: s1,
        affinity: [
          term('region', Exists('service'), DoesNotExist('wrongkey')),
          term('region', In('service', 'securityscan2'), NotIn('service', 'WrongValue')),
        ],
      }),
      pods: [p({ node: 'machine1', labels: scan })],
      want: AFFINITY,
    },
    {
      name: 'satisfies the PodAffinity and PodAntiAffinity with the existing pod',
      pod: p({
        labels: s1,
        affinity: [term('region', In('service', 'securityscan', 'value2'))],
        anti: [term('node', In('service', 'antivirusscan', 'value2'))],
      }),
      pods: [p({ node: 'machine1', labels: scan })],
      want: OK,
    },
    {
      name: 'satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod',
      pod: p({
        labels: s1,
        affinity: [term('region', In('service', 'securityscan', 'value2'))],
        anti: [term('node', In('service', 'antivirusscan', 'value2'))],
      }),
      pods: [p({ node: 'machine1', labels: scan, anti: [term('node', In('service', 'antivirusscan', 'value2'))] })],
      want: OK,
    },
    {
      name: "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
      pod: p({
        labels: s1,
        affinity: [term('region', In('service', 'securityscan', 'value2'))],
        anti: [term('zone', In('service', 'securityscan', 'value2'))],
      }),
      pods: [p({ node: 'machine1', labels: scan })],
      want: ANTI,
    },
    {
      name: "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
      pod: p({
        labels: scan,
        affinity: [term('region', In('service', 'securityscan', 'value2'))],
        anti: [term('node', In('service', 'antivirusscan', 'value2'))],
      }),
      pods: [p({ node: 'machine1', labels: scan, anti: [term('zone', In('service', 'securityscan', 'value2'))] })],
      want: EXISTING,
    },
    {
      name: 'pod matches its own Label in PodAffinity and that matches the existing pod Labels',
      pod: p({ labels: scan, affinity: [term('region', NotIn('service', 'securityscan', 'value2'))] }),
      pods: [p({ node: 'machine2', labels: scan })],
      want: AFFINITY,
    },
    {
      name: "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
      pod: p({ labels: scan }),
      pods: [p({ node: 'machine1', labels: scan, anti: [term('zone', In('service', 'securityscan', 'value2'))] })],
      want: EXISTING,
    },
    {
      name: 'verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod',
      pod: p({ labels: scan }),
      pods: [p({ node: 'machine1', labels: scan, anti: [term('zone', NotIn('service', 'securityscan', 'value2'))] })],
      want: OK,
    },
    {
      name: "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
      pod: p({ labels: scan, anti: [term('region', Exists('service')), term('region', Exists('security'))] }),
      pods: [p({ node: 'machine1', labels: s1, anti: [term('zone', Exists('security'))] })],
      want: ANTI,
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(filter(c.pod, [node1], c.pods ?? [])[0], c.want));
});

describe('InterPodAffinity filter, several nodes (TestRequiredAffinityMultipleNodes)', () => {
  const china = { region: 'China' };
  const chinaAz1 = { region: 'China', az: 'az1' };
  const india = { region: 'India' };
  const cases: { name: string; pod: Pod; pods: Pod[]; nodes: Node[]; want: string[][] }[] = [
    {
      name: 'A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules',
      pod: p({ affinity: [term('region', In('foo', 'bar'))] }),
      pods: [p({ node: 'node1', labels: { foo: 'bar' } })],
      nodes: [n('node1', china), n('node2', chinaAz1), n('node3', india)],
      want: [OK, OK, AFFINITY],
    },
    {
      name: "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
      pod: p({
        labels: { foo: 'bar', service: 'securityscan' },
        affinity: [term('zone', In('foo', 'bar')), term('zone', In('service', 'securityscan'))],
      }),
      pods: [p({ node: 'nodeA', labels: { foo: 'bar' } })],
      nodes: [n('nodeA', { zone: 'az1', hostname: 'h1' }), n('nodeB', { zone: 'az2', hostname: 'h2' })],
      want: [OK, OK],
    },
    {
      name: 'The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys',
      pod: p({
        labels: { foo: 'bar', service: 'securityscan' },
        affinity: [term('zone', In('foo', 'bar')), term('zone', In('service', 'securityscan'))],
      }),
      pods: [p({ node: 'nodeA', labels: { foo: 'bar' } })],
      nodes: [n('nodeA', { zoneLabel: 'az1', hostname: 'h1' }), n('nodeB', { zoneLabel: 'az2', hostname: 'h2' })],
      want: [AFFINITY, AFFINITY],
    },
    {
      name: 'NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.',
      pod: p({ anti: [term('region', In('foo', 'abc'))] }),
      pods: [p({ node: 'nodeA', labels: { foo: 'abc' } })],
      nodes: [n('nodeA', { region: 'r1', hostname: 'nodeA' }), n('nodeB', { region: 'r1', hostname: 'nodeB' })],
      want: [ANTI, ANTI],
    },
    {
      name: 'This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.',
      pod: p({ anti: [term('region', In('foo', 'abc')), term('zone', In('service', 'securityscan'))] }),
      pods: [p({ node: 'nodeA', labels: { foo: 'abc', service: 'securityscan' } })],
      nodes: [
        n('nodeA', { region: 'r1', zone: 'z1', hostname: 'nodeA' }),
        n('nodeB', { region: 'r1', zone: 'z2', hostname: 'nodeB' }),
      ],
      want: [ANTI, ANTI],
    },
    {
      name: 'NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC',
      pod: p({ anti: [term('region', In('foo', 'abc'))] }),
      pods: [p({ node: 'nodeA', labels: { foo: 'abc' } })],
      nodes: [n('nodeA', china), n('nodeB', chinaAz1), n('nodeC', india)],
      want: [ANTI, ANTI, OK],
    },
    {
      name: 'NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)',
      pod: p({ namespace: 'NS1', labels: { foo: '123' }, anti: [term('region', In('foo', 'bar'))] }),
      pods: [
        p({ node: 'nodeA', namespace: 'NS1', labels: { foo: 'bar' } }),
        p({ node: 'nodeC', namespace: 'NS2', anti: [term('region', In('foo', '123'))] }),
      ],
      nodes: [n('nodeA', china), n('nodeB', chinaAz1), n('nodeC', india)],
      want: [ANTI, ANTI, OK],
    },
    {
      name: "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
      pod: p({ labels: { foo: '' } }),
      pods: [p({ node: 'nodeA', anti: [term('invalid-node-label', Exists('foo'))] })],
      nodes: [
        n('nodeA', { region: 'r1', zone: 'z1', hostname: 'nodeA' }),
        n('nodeB', { region: 'r1', zone: 'z1', hostname: 'nodeB' }),
      ],
      want: [OK, OK],
    },
    {
      name: "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
      pod: p({ anti: [term('invalid-node-label', Exists('foo'))] }),
      pods: [p({ node: 'nodeA', labels: { foo: '' } })],
      nodes: [
        n('nodeA', { region: 'r1', zone: 'z1', hostname: 'nodeA' }),
        n('nodeB', { region: 'r1', zone: 'z1', hostname: 'nodeB' }),
      ],
      want: [OK, OK],
    },
    {
      name: "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
      pod: p({ labels: { foo: '', bar: '' } }),
      pods: [
        p({ node: 'nodeA', anti: [term('zone', Exists('foo'))] }),
        p({ node: 'nodeA', anti: [term('region', Exists('bar'))] }),
      ],
      nodes: [
        n('nodeA', { region: 'r1', zone: 'z1', hostname: 'nodeA' }),
        n('nodeB', { region: 'r1', zone: 'z2', hostname: 'nodeB' }),
      ],
      want: [EXISTING, EXISTING],
    },
    {
      name: "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
      pod: p({ anti: [term('zone', Exists('foo')), term('region', Exists('bar'))] }),
      pods: [p({ node: 'nodeA', labels: { foo: '' } }), p({ node: 'nodeB', labels: { bar: '' } })],
      nodes: [
        n('nodeA', { region: 'r1', zone: 'z1', hostname: 'nodeA' }),
        n('nodeB', { region: 'r1', zone: 'z2', hostname: 'nodeB' }),
      ],
      want: [ANTI, ANTI],
    },
    {
      name: "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
      pod: p({ labels: { foo: '', bar: '' } }),
      pods: [p({ node: 'nodeA', anti: [term('invalid-node-label', Exists('foo')), term('zone', Exists('bar'))] })],
      nodes: [
        n('nodeA', { region: 'r1', zone: 'z1', hostname: 'nodeA' }),
        n('nodeB', { region: 'r1', zone: 'z2', hostname: 'nodeB' }),
      ],
      want: [EXISTING, OK],
    },
    {
      name: "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
      pod: p({ anti: [term('invalid-node-label', Exists('foo')), term('zone', Exists('bar'))] }),
      pods: [p({ node: 'nodeA', labels: { foo: '', bar: '' } })],
      nodes: [
        n('nodeA', { region: 'r1', zone: 'z1', hostname: 'nodeA' }),
        n('nodeB', { region: 'r1', zone: 'z2', hostname: 'nodeB' }),
      ],
      want: [ANTI, OK],
    },
    {
      name: "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
      pod: p({ labels: { foo: '', bar: '' } }),
      pods: [p({ node: 'nodeA', anti: [term('region', Exists('foo')), term('zone', Exists('bar'))] })],
      nodes: [
        n('nodeA', { region: 'r1', zone: 'z1', hostname: 'nodeA' }),
        n('nodeB', { region: 'r1', zone: 'z2', hostname: 'nodeB' }),
      ],
      want: [EXISTING, EXISTING],
    },
    {
      name: "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
      pod: p({ anti: [term('region', Exists('foo')), term('zone', Exists('bar'))] }),
      pods: [p({ node: 'nodeA', labels: { foo: '', bar: '' } })],
      nodes: [
        n('nodeA', { region: 'r1', zone: 'z1', hostname: 'nodeA' }),
        n('nodeB', { region: 'r1', zone: 'z2', hostname: 'nodeB' }),
      ],
      want: [ANTI, ANTI],
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(filter(c.pod, c.nodes, c.pods), c.want));
});

describe('InterPodAffinity score (TestPreferredAffinity)', () => {
  const china = n('node1', { region: 'China' });
  const india = n('node2', { region: 'India' });
  const az1 = n('node3', { az: 'az1' });
  const nodes = [china, india, az1];
  const s1 = { security: 'S1' };
  const s2 = { security: 'S2' };
  const preferS1 = (weight: number): [number, PodAffinityTerm][] => [[weight, term('region', In('security', 'S1'))]];
  const cases: { name: string; pod: Pod; pods?: Pod[]; nodes?: Node[]; want: Record<string, number> }[] = [
    {
      name: 'all nodes have same priority as no affinity',
      pod: p({ labels: s1 }),
      want: { node1: 0, node2: 0, node3: 0 },
    },
    {
      name: 'Affinity: pod that matches topology key & pods in nodes will get high score comparing to others which doesnt match either pods in nodes or in topology key',
      pod: p({ labels: s1, preferred: preferS1(5) }),
      pods: [p({ node: 'node1', labels: s1 }), p({ node: 'node2', labels: s2 }), p({ node: 'node3', labels: s1 })],
      want: { node1: 100, node2: 0, node3: 0 },
    },
    {
      name: 'All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score',
      pod: p({ labels: s1, preferred: preferS1(5) }),
      pods: [p({ node: 'node1', labels: s1 })],
      nodes: [
        n('node1', { region: 'China' }),
        n('node2', { region: 'China', az: 'az1' }),
        n('node3', { region: 'India' }),
      ],
      want: { node1: 100, node2: 100, node3: 0 },
    },
    {
      name: 'Anti Affinity: pod that does not match existing pods in node will get high score ',
      pod: p({ labels: s1, preferredAnti: preferS1(5) }),
      pods: [p({ node: 'node1', labels: s1 }), p({ node: 'node2', labels: s2 })],
      want: { node1: 0, node2: 100, node3: 100 },
    },
    {
      name: 'Affinity and Anti Affinity: both kinds of preferred terms add up per topology domain',
      pod: p({ labels: s1, preferred: preferS1(8), preferredAnti: [[5, term('region', In('security', 'S2'))]] }),
      pods: [p({ node: 'node1', labels: s1 }), p({ node: 'node2', labels: s2 })],
      want: { node1: 100, node2: 0, node3: 38 },
    },
    {
      name: 'Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry',
      pod: p({ labels: s1 }),
      pods: [p({ node: 'node1', labels: s2, preferred: [[5, term('region', In('security', 'S1'))]] })],
      want: { node1: 100, node2: 0, node3: 0 },
    },
    {
      name: 'Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score',
      pod: p({ labels: s1 }),
      pods: [p({ node: 'node1', labels: s2, preferredAnti: [[5, term('region', In('security', 'S1'))]] })],
      want: { node1: 0, node2: 100, node3: 100 },
    },
    {
      // NormalizeScore computes float64(MaxNodeScore) * (float64(s-min) / float64(max-min)) and truncates:
      // 29 of 50 is 57 there, not 58 as integer arithmetic gives.
      name: 'normalized as upstream does, in floating point',
      pod: p({
        labels: s1,
        preferred: [
          [29, term('kubernetes.io/hostname', In('app', 'a'))],
          [21, term('kubernetes.io/hostname', In('app', 'b'))],
        ],
      }),
      pods: [
        p({ node: 'h1', labels: { app: 'a' } }),
        p({ node: 'h1', labels: { app: 'b' } }),
        p({ node: 'h2', labels: { app: 'a' } }),
      ],
      nodes: ['h1', 'h2', 'h3'].map((h) => n(h, { 'kubernetes.io/hostname': h })),
      want: { h1: 100, h2: 57, h3: 0 },
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(score(c.pod, c.nodes ?? nodes, c.pods ?? []), c.want));
});

describe('InterPodAffinity score, existing pods required affinity (TestPreferredAffinityWithHardPodAffinitySymmetricWeight)', () => {
  const nodes = [n('node1', { region: 'China' }), n('node2', { region: 'India' }), n('node3', { az: 'az1' })];
  const pod = p({ labels: { service: 'S1' } });
  const pods = [
    p({ node: 'node1', affinity: [term('region', In('service', 'S1'))] }),
    p({ node: 'node2', affinity: [term('region', In('service', 'S2'))] }),
  ];
  it('with the default hardPodAffinityWeight (1): the node of an existing pod whose required affinity matches scores highest', () =>
    assert.deepEqual(score(pod, nodes, pods), { node1: 100, node2: 0, node3: 0 }));
  it('with hardPodAffinityWeight 0: existing pods required affinity does not score', () =>
    assert.deepEqual(score(pod, nodes, pods, 0), { node1: 0, node2: 0, node3: 0 }));
});

// A namespaceSelector selects namespaces by their labels (upstream's Namespace lister): those of the Namespace objects
// the store holds, or only `kubernetes.io/metadata.name` for a namespace it does not hold (a cluster-state file
// without Namespace objects). As upstream's namespaces in filtering_test.go: subteam1.team1 and subteam2.team1 carry
// team=team1, subteam1.team2 team=team2.
describe('InterPodAffinity namespaceSelector matches Namespace labels', () => {
  const store = new ClusterStore();
  for (const [name, team] of [
    ['subteam1.team1', 'team1'],
    ['subteam2.team1', 'team1'],
    ['subteam1.team2', 'team2'],
  ])
    store.upsert('Namespace', {
      metadata: {
        name,
        uid: `uid-${name}`,
        resourceVersion: '1',
        labels: { team, 'kubernetes.io/metadata.name': name },
      },
    });
  const node1 = n('machine1', { region: 'r1', zone: 'z11' });
  const scan = { service: 'securityscan' };
  const team1: PodAffinityTerm = {
    ...term('region', In('service', 'securityscan')),
    namespaceSelector: { matchLabels: { team: 'team1' } },
  };
  function verdict(pod: Pod, pods: Pod[], namespaceLabels = storeNamespaceLabels(store)): string[] {
    const infos = [newNodeInfo(node1, pods)];
    const plugin = new InterPodAffinityPlugin({ list: () => infos }, 1, namespaceLabels);
    const state = new CycleState();
    return plugin.preFilter(state, pod).code === 'Skip' ? OK : view(plugin.filter(state, pod, infos[0]));
  }

  it("a required affinity term's namespaceSelector finds a matching pod in a namespace whose labels it selects", () => {
    const pod = p({ affinity: [team1] });
    assert.deepEqual(verdict(pod, [p({ node: 'machine1', namespace: 'subteam2.team1', labels: scan })]), OK);
    assert.deepEqual(verdict(pod, [p({ node: 'machine1', namespace: 'subteam1.team2', labels: scan })]), AFFINITY);
  });

  it("an existing pod's anti-affinity namespaceSelector is matched against the incoming pod's namespace labels", () => {
    const existing = p({ node: 'machine1', labels: { app: 'guard' }, anti: [team1] });
    assert.deepEqual(verdict(p({ namespace: 'subteam1.team1', labels: scan }), [existing]), EXISTING);
    assert.deepEqual(verdict(p({ namespace: 'subteam1.team2', labels: scan }), [existing]), OK);
  });

  it('a namespace without a Namespace object has only its kubernetes.io/metadata.name label', () => {
    const byName: PodAffinityTerm = {
      ...term('region', In('service', 'securityscan')),
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'orphan' } },
    };
    const inOrphan = [p({ node: 'machine1', namespace: 'orphan', labels: scan })];
    assert.deepEqual(verdict(p({ affinity: [byName] }), inOrphan), OK);
    assert.deepEqual(verdict(p({ affinity: [team1] }), inOrphan), AFFINITY);
    // Without any Namespace objects, a team label matches nowhere.
    const inTeam1 = [p({ node: 'machine1', namespace: 'subteam2.team1', labels: scan })];
    assert.deepEqual(verdict(p({ affinity: [team1] }), inTeam1, namespaceNameLabel), AFFINITY);
  });
});
