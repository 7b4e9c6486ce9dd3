// Explain and simulate against the real thing, on every kube-scheduler version the suites run: the same clusters in
// a real control plane (kube-apiserver and etcd), a real kube-scheduler (no extender, a schedulerName of its own)
// tries each pod, and its PodScheduled message must equal explain's summary byte for byte (computed on the same
// objects at the same moment: the API server's, dumped as a cluster-state file), a pod it binds must be one explain
// finds a node for (that node among them), and the replicas it schedules must equal simulate's count.
//
// One control plane for the file; each scenario empties it (pods, nodes, controllers, Services) and gets its own
// kube-scheduler. Every plugin of the default profile is exercised (taints, cordon, node selector and affinity, host
// ports, cpu, extended resources, pod overhead, init and sidecar containers, Too many pods, spread constraints with
// DoNotSchedule skew, pod affinity and anti-affinity both ways, the default spread constraints a ReplicaSet or Service
// brings, namespaceSelectors against Namespace labels), and one cluster is random: EXPLAIN_E2E_SEED=<n> replays the
// seed a failure printed.
//
// The objects are made as a user makes them for a real API server, which refuses what the imitation took: a pod's
// preemptionPolicy comes from a PriorityClass, its overhead from a RuntimeClass, an extended resource is requested
// with an equal limit, a controller's template is a valid pod template, and an owner reference carries the owner's
// real uid. Explain reads each pod as the API server stored it (admission's defaults included).
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { analyze } from '../../src/cli/analyze.ts';
import { RESOURCES as API_RESOURCES } from '../../src/cluster/kube/resources.ts';
import { type Container, KINDS, type OwnerReference, type Pod } from '../../src/cluster/types.ts';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import { kubeComponents } from '../components/components.ts';
import { type ControlPlane, startControlPlane } from '../components/control-plane.ts';
import type { KubeApi, KubeObject } from '../components/kube-api.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { type KubeSchedulerBinary, startKubeScheduler } from './kube-scheduler.ts';

const found = await kubeComponents();
const SCHEDULER = 'explain-e2e';
const ZONE = 'topology.kubernetes.io/zone';
const HOST = 'kubernetes.io/hostname';

interface NodeOptions {
  labels?: Record<string, string>;
  spec?: object;
  pods?: string;
  cpu?: string;
  memory?: string;
  extra?: Record<string, string>;
}
function node(name: string, o: NodeOptions = {}): KubeObject {
  const allocatable = { cpu: o.cpu ?? '2', memory: o.memory ?? '4Gi', pods: o.pods ?? '110', ...o.extra };
  return created({
    kind: 'Node',
    metadata: { name, uid: `uid-${name}`, resourceVersion: '1', labels: { [HOST]: name, ...o.labels } },
    spec: o.spec ?? {},
    status: { allocatable, capacity: allocatable, conditions: [{ type: 'Ready', status: 'True' }] },
  } as never);
}

/** An extended resource cannot be overcommitted: the API server wants its limit, equal to the request. */
function withExtendedLimits(c: Container): Container {
  const requests = (c.resources?.requests ?? {}) as Record<string, string>;
  const extended = Object.entries(requests).filter(([name]) => name.includes('/'));
  if (extended.length === 0) return c;
  return { ...c, resources: { ...c.resources, limits: { ...c.resources?.limits, ...Object.fromEntries(extended) } } };
}

interface PodOptions {
  spec?: Partial<Pod['spec']>;
  cpu?: string;
  labels?: Record<string, string>;
  nodeName?: string;
  containers?: Container[];
  ownerReferences?: OwnerReference[];
  namespace?: string;
}
function pod(name: string, o: PodOptions = {}): KubeObject {
  const containers = (
    o.containers ?? [{ name: 'c', image: 'nginx', resources: { requests: { cpu: o.cpu ?? '100m', memory: '64Mi' } } }]
  ).map(withExtendedLimits);
  return created({
    kind: 'Pod',
    metadata: {
      name,
      namespace: o.namespace ?? 'default',
      uid: `uid-${name}`,
      resourceVersion: '1',
      labels: o.labels ?? { app: name },
      ...(o.ownerReferences ? { ownerReferences: o.ownerReferences } : {}),
    },
    spec: { schedulerName: SCHEDULER, containers, ...(o.nodeName ? { nodeName: o.nodeName } : {}), ...o.spec },
    status: { phase: o.nodeName ? 'Running' : 'Pending' },
  } as never);
}

/** A required term for pods labelled app=`app`, in the namespaces labelled `namespaces` if given. */
const requiredTerm = (app: string, topologyKey: string, namespaces?: Record<string, string>) => [
  {
    labelSelector: { matchLabels: { app } },
    topologyKey,
    ...(namespaces ? { namespaceSelector: { matchLabels: namespaces } } : {}),
  },
];
const antiAffinity = (
  app: string,
  topologyKey: string,
  namespaces?: Record<string, string>,
): Pod['spec']['affinity'] => ({
  podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: requiredTerm(app, topologyKey, namespaces) },
});
const affinity = (app: string, topologyKey: string, namespaces?: Record<string, string>): Pod['spec']['affinity'] => ({
  podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: requiredTerm(app, topologyKey, namespaces) },
});
const spread = (
  maxSkew: number,
  topologyKey: string,
  labelSelector: object | null,
  whenUnsatisfiable = 'DoNotSchedule',
) => [{ maxSkew, topologyKey, whenUnsatisfiable, labelSelector }] as Pod['spec']['topologySpreadConstraints'];

interface Scenario {
  name: string;
  /** Nodes and the pods already bound to them. */
  cluster: KubeObject[];
  /** Tried one at a time, in order; a pod kube-scheduler binds stays, one it cannot is deleted before the next. */
  probes: KubeObject[];
  /**
   * Replicas of one template: simulate's count against the number kube-scheduler binds; with `placements`, also how
   * many go to each node (for clusters whose scores leave kube-scheduler no tie to break at random).
   */
  simulate?: { template: PodOptions; replicas: number; placements?: boolean };
  /** Said in every assertion message (the random scenario's seed). */
  context?: string;
}

const MIXED: Scenario = {
  name: 'taints, cordon, pods limit, selectors, metadata.name affinity, affinity to nothing, missing spread key',
  cluster: [
    node('n-taint', {
      labels: { [ZONE]: 'a' },
      spec: { taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }] },
    }),
    node('n-cordoned', { labels: { [ZONE]: 'a' }, spec: { unschedulable: true } }),
    node('n-full', { labels: { [ZONE]: 'b' }, pods: '0' }),
    node('n-b', { labels: { [ZONE]: 'b', disk: 'ssd' } }),
    node('n-c', { labels: { [ZONE]: 'c' } }),
  ],
  probes: [
    pod('too-big', { cpu: '3' }),
    pod('fits-partly', { cpu: '1500m' }),
    pod('selector', { spec: { nodeSelector: { disk: 'hdd' } } }),
    pod('never-preempts', { spec: { preemptionPolicy: 'Never' }, cpu: '3' }),
    pod('by-node-name', {
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n-taint'] }] }],
            },
          },
        },
      },
    }),
    pod('affinity-to-nothing', { spec: { affinity: affinity('nothing', ZONE) } }),
    pod('missing-spread-key', {
      spec: { topologySpreadConstraints: spread(1, 'rack', { matchLabels: { app: 'x' } }) },
    }),
  ],
  // Host ports make one replica per node: the ready, untainted, uncordoned nodes with room for a pod.
  simulate: {
    template: {
      labels: { app: 'web' },
      containers: [
        {
          name: 'c',
          image: 'nginx',
          ports: [{ containerPort: 80, hostPort: 8080 }],
          resources: { requests: { cpu: '100m' } },
        },
      ],
    },
    replicas: 4,
  },
};

const web = (name: string, nodeName: string) => pod(name, { nodeName, labels: { app: 'web' } });
const SPREAD: Scenario = {
  name: 'pod topology spread: DoNotSchedule skew, minDomains, missing keys, node inclusion, an empty selector',
  cluster: [
    node('a1', { labels: { [ZONE]: 'a' } }),
    node('a2', { labels: { [ZONE]: 'a' }, spec: { taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }] } }),
    node('b1', { labels: { [ZONE]: 'b' } }),
    node('b2', { labels: { [ZONE]: 'b' } }),
    node('c1', { labels: { [ZONE]: 'c' }, cpu: '500m' }),
    node('no-zone'),
    web('web-a1-0', 'a1'),
    web('web-a1-1', 'a1'),
    web('web-a2-0', 'a2'),
    web('web-b1-0', 'b1'),
  ],
  probes: [
    // Zones a/b/c hold 3/1/0: only zone c keeps the skew, and c1 lacks the cpu.
    pod('zone-skew', {
      labels: { app: 'web' },
      cpu: '600m',
      spec: { topologySpreadConstraints: spread(1, ZONE, { matchLabels: { app: 'web' } }) },
    }),
    // Fewer zones than minDomains: the global minimum is 0.
    pod('min-domains', {
      labels: { app: 'web' },
      cpu: '600m',
      spec: {
        topologySpreadConstraints: [
          {
            maxSkew: 2,
            topologyKey: ZONE,
            whenUnsatisfiable: 'DoNotSchedule',
            labelSelector: { matchLabels: { app: 'web' } },
            minDomains: 4,
          },
        ],
      },
    }),
    // The taint on a2 honoured: a2 no longer counts as a domain, so a1 (2 pods) is compared with b's and no-zone's 0.
    pod('taints-honored', {
      labels: { app: 'web' },
      spec: {
        nodeSelector: { [ZONE]: 'a' },
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: HOST,
            whenUnsatisfiable: 'DoNotSchedule',
            labelSelector: { matchLabels: { app: 'web' } },
            nodeTaintsPolicy: 'Honor',
          },
        ],
      },
    }),
    // labelSelector {}: counted as matching nothing by v1.35 (kubernetes#141339), so a1 is not too crowded.
    pod('empty-selector', {
      labels: { app: 'web' },
      spec: { nodeSelector: { [ZONE]: 'a' }, topologySpreadConstraints: spread(1, HOST, {}) },
    }),
    pod('hostname-skew-2', {
      labels: { app: 'web' },
      spec: { topologySpreadConstraints: spread(2, HOST, { matchLabels: { app: 'web' } }) },
    }),
    pod('schedule-anyway', {
      labels: { app: 'web' },
      cpu: '5',
      spec: { topologySpreadConstraints: spread(1, ZONE, { matchLabels: { app: 'web' } }, 'ScheduleAnyway') },
    }),
  ],
  // One replica per zone and per node at most one more than the emptiest: spread by hostname, maxSkew 1.
  simulate: {
    template: {
      labels: { app: 'spread' },
      cpu: '700m',
      spec: { topologySpreadConstraints: spread(1, HOST, { matchLabels: { app: 'spread' } }) },
    },
    replicas: 8,
  },
};

const AFFINITY: Scenario = {
  name: 'inter-pod affinity: affinity, anti-affinity, existing pods anti-affinity, the first pod of a group',
  cluster: [
    node('n1', { labels: { [ZONE]: 'a' } }),
    node('n2', { labels: { [ZONE]: 'a' } }),
    node('n3', { labels: { [ZONE]: 'b' } }),
    node('n4', { labels: { [ZONE]: 'b' } }),
    node('n5'),
    pod('db-0', { nodeName: 'n1', labels: { app: 'db' }, spec: { affinity: antiAffinity('db', HOST) } }),
    pod('cache-0', { nodeName: 'n2', labels: { app: 'cache' } }),
    pod('guard', { nodeName: 'n3', labels: { app: 'guard' }, spec: { affinity: antiAffinity('front', ZONE) } }),
  ],
  probes: [
    pod('db-1', {
      labels: { app: 'db' },
      spec: { nodeSelector: { [HOST]: 'n1' }, affinity: antiAffinity('db', HOST) },
    }),
    pod('front', { labels: { app: 'front' }, spec: { nodeSelector: { [ZONE]: 'b' } } }),
    pod('near-cache', { spec: { affinity: affinity('cache', ZONE), nodeSelector: { [ZONE]: 'b' } } }),
    pod('near-cache-ok', { spec: { affinity: affinity('cache', ZONE) } }),
    pod('first-of-group', { labels: { app: 'group' }, spec: { affinity: affinity('group', ZONE) } }),
    pod('away-from-db', { labels: { app: 'x' }, cpu: '1900m', spec: { affinity: antiAffinity('db', ZONE) } }),
  ],
  simulate: {
    template: { labels: { app: 'replica' }, spec: { affinity: antiAffinity('replica', HOST) } },
    replicas: 7,
  },
};

const init = (name: string, cpu: string, restartPolicy?: string): Container => ({
  name,
  image: 'busybox',
  resources: { requests: { cpu } },
  ...(restartPolicy ? { restartPolicy } : {}),
});
const RESOURCES: Scenario = {
  name: 'resources: Too many pods, host ports, extended resources, pod overhead, init and sidecar containers',
  cluster: [
    node('r1', { pods: '2' }),
    node('r2', { extra: { 'example.com/gpu': '1' } }),
    node('r3', { extra: { 'example.com/gpu': '2' } }),
    node('r4', { cpu: '1', memory: '1Gi' }),
    pod('r1-0', { nodeName: 'r1' }),
    pod('r1-1', { nodeName: 'r1' }),
    pod('gpu-user', {
      nodeName: 'r2',
      containers: [{ name: 'c', image: 'cuda', resources: { requests: { cpu: '100m', 'example.com/gpu': '1' } } }],
    }),
    pod('port-user', {
      nodeName: 'r3',
      containers: [{ name: 'c', image: 'nginx', ports: [{ containerPort: 80, hostPort: 8080 }] }],
    }),
  ],
  probes: [
    pod('gpu-and-port', {
      containers: [
        {
          name: 'c',
          image: 'cuda',
          ports: [{ containerPort: 80, hostPort: 8080 }],
          resources: { requests: { cpu: '100m', 'example.com/gpu': '1' } },
        },
      ],
    }),
    pod('overhead', { cpu: '1800m', spec: { overhead: { cpu: '250m' } } }),
    pod('init-container', { spec: { initContainers: [init('init', '1950m')] } }),
    pod('sidecar', { cpu: '1', spec: { initContainers: [init('sidecar', '1', 'Always')] } }),
    pod('memory', { cpu: '100m', containers: [{ name: 'c', image: 'x', resources: { requests: { memory: '3Gi' } } }] }),
    pod('gpu-fits', {
      containers: [{ name: 'c', image: 'cuda', resources: { requests: { cpu: '100m', 'example.com/gpu': '2' } } }],
    }),
  ],
  simulate: { template: { cpu: '450m' }, replicas: 12 },
};

// kube-scheduler's default topology spread constraints (ScheduleAnyway: hostname maxSkew 3, zone maxSkew 5) over the
// pods of the Services and the controller that select a pod without constraints of its own. A big node holding four
// replicas already and a small one half used by another pod: with the defaults the next replicas go to the small node
// until the spread evens out (3 there, then 1 on the big one); without them, all four would go to the big one. The
// scores differ by 5 or more at every step, so kube-scheduler has no tie to break.
const webLabels = { app: 'web', 'pod-template-hash': '7d9f8' };
function defaultSpread(selectedBy: 'ReplicaSet' | 'StatefulSet' | 'Service'): Scenario {
  const meta = { name: 'web-7d9f8', namespace: 'default', uid: 'uid-web-7d9f8', resourceVersion: '1' };
  const controller = { apiVersion: 'apps/v1', kind: selectedBy, name: meta.name, uid: meta.uid, controller: true };
  const owned = selectedBy === 'Service' ? {} : { ownerReferences: [controller] };
  const selector: KubeObject =
    selectedBy === 'Service'
      ? created({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { ...meta, name: 'web' },
          spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
        } as never)
      : created({
          apiVersion: 'apps/v1',
          kind: selectedBy,
          metadata: meta,
          spec: {
            replicas: 5,
            selector: { matchLabels: webLabels },
            ...(selectedBy === 'StatefulSet' ? { serviceName: 'web' } : {}),
            template: { metadata: { labels: webLabels }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
          },
        } as never);
  return {
    name: `kube-scheduler's default topology spreading, the replicas selected by a ${selectedBy}`,
    cluster: [
      node('big', { labels: { [ZONE]: 'a' }, cpu: '32', memory: '16Gi' }),
      node('small', { labels: { [ZONE]: 'b' }, cpu: '4', memory: '16Gi' }),
      selector,
      ...[0, 1, 2, 3].map((i) => pod(`web-${i}`, { nodeName: 'big', labels: webLabels, ...owned })),
      pod('hog', { nodeName: 'small', cpu: '2' }),
    ],
    probes: [],
    simulate: { template: { labels: webLabels, ...owned }, replicas: 4, placements: true },
  };
}

// InterPodAffinity's namespaceSelector selects namespaces by their labels, not only by kubernetes.io/metadata.name:
// a db pod in namespace team-a (team=a) keeps away a pod whose anti-affinity selects team=a, and a guard in team-b
// whose anti-affinity selects the namespaces labelled tier=web keeps the web pods of `default` (tier=web) out of its
// zone.
const namespace = (name: string, labels: Record<string, string>): KubeObject =>
  created({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, uid: `uid-ns-${name}`, resourceVersion: '1', labels },
  } as never);
const NAMESPACES: Scenario = {
  name: "inter-pod affinity's namespaceSelector against the namespaces' labels",
  cluster: [
    namespace('default', { tier: 'web' }),
    namespace('team-a', { team: 'a' }),
    namespace('team-b', { team: 'b' }),
    node('n1', { labels: { [ZONE]: 'a' } }),
    node('n2', { labels: { [ZONE]: 'a' } }),
    node('n3', { labels: { [ZONE]: 'b' } }),
    pod('db', { namespace: 'team-a', nodeName: 'n1', labels: { app: 'db' } }),
    pod('guard', {
      namespace: 'team-b',
      nodeName: 'n3',
      labels: { app: 'guard' },
      spec: { affinity: antiAffinity('web', ZONE, { tier: 'web' }) },
    }),
  ],
  probes: [
    pod('away-from-team-a-db', {
      spec: { nodeSelector: { [ZONE]: 'a' }, affinity: antiAffinity('db', ZONE, { team: 'a' }) },
    }),
    pod('near-team-a-db', { spec: { affinity: affinity('db', HOST, { team: 'a' }) } }),
    pod('web-near-guard', { labels: { app: 'web' }, spec: { nodeSelector: { [ZONE]: 'b' } } }),
  ],
};

/** A random cluster and pods from `seed` (fast-check's generator): only what the default profile decides. */
function randomScenario(seed: number): Scenario {
  const apps = ['web', 'db', 'cache'];
  /** `arb` one time in `1 + absent`, undefined otherwise (fc.option leaves values out one time in six only). */
  const sometimes = <T>(arb: fc.Arbitrary<T>, absent = 2) =>
    fc.oneof({ arbitrary: fc.constant(undefined), weight: absent }, { arbitrary: arb, weight: 1 });
  const nodeArb = fc.record({
    zone: fc.constantFrom('a', 'b', 'c', undefined),
    cpu: fc.constantFrom('1', '2', '4'),
    pods: fc.constantFrom('2', '4', '110'),
    taint: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    cordoned: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    disk: fc.constantFrom('ssd', 'hdd'),
  });
  const shape = fc.record({
    app: fc.constantFrom(...apps),
    cpu: fc.constantFrom('100m', '300m', '700m', '1500m'),
    disk: sometimes(fc.constantFrom('ssd', 'hdd')),
    tolerates: fc.boolean(),
    spread: sometimes(
      fc.record({
        key: fc.constantFrom(ZONE, HOST),
        maxSkew: fc.integer({ min: 1, max: 2 }),
        when: fc.constantFrom('DoNotSchedule', 'ScheduleAnyway'),
        app: fc.constantFrom(...apps),
      }),
      1,
    ),
    anti: sometimes(fc.record({ key: fc.constantFrom(ZONE, HOST), app: fc.constantFrom(...apps) })),
    near: sometimes(fc.record({ key: fc.constantFrom(ZONE, HOST), app: fc.constantFrom(...apps) }), 3),
    hostPort: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  });
  const world = fc.record({
    nodes: fc.array(nodeArb, { minLength: 4, maxLength: 8 }),
    existing: fc.array(fc.record({ node: fc.nat(7), shape }), { maxLength: 14 }),
    probes: fc.array(shape, { minLength: 6, maxLength: 10 }),
    template: fc.record({ cpu: fc.constantFrom('300m', '700m', '1'), anti: fc.boolean(), port: fc.boolean() }),
  });
  const [w] = fc.sample(world, { seed, numRuns: 1 });
  type Shape = (typeof w.probes)[number];
  const specOf = (s: Shape, existing: boolean): PodOptions => {
    const spec: Partial<Pod['spec']> = {};
    if (!existing && s.disk) spec.nodeSelector = { disk: s.disk };
    if (s.tolerates) spec.tolerations = [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }];
    if (!existing && s.spread)
      spec.topologySpreadConstraints = spread(
        s.spread.maxSkew,
        s.spread.key,
        { matchLabels: { app: s.spread.app } },
        s.spread.when,
      );
    const a: NonNullable<Pod['spec']['affinity']> = {};
    if (s.anti) a.podAntiAffinity = antiAffinity(s.anti.app, s.anti.key)!.podAntiAffinity;
    if (!existing && s.near) a.podAffinity = affinity(s.near.app, s.near.key)!.podAffinity;
    if (a.podAffinity || a.podAntiAffinity) spec.affinity = a;
    const ports = s.hostPort ? [{ containerPort: 80, hostPort: 9000 }] : undefined;
    return {
      labels: { app: s.app },
      spec,
      containers: [
        {
          name: 'c',
          image: 'nginx',
          resources: { requests: { cpu: s.cpu, memory: '64Mi' } },
          ...(ports ? { ports } : {}),
        },
      ],
    };
  };
  const names = w.nodes.map((_, i) => `node-${i}`);
  return {
    name: `a random cluster (seed ${seed})`,
    context: `EXPLAIN_E2E_SEED=${seed}`,
    cluster: [
      ...w.nodes.map((n, i) =>
        node(names[i], {
          cpu: n.cpu,
          pods: n.pods,
          labels: { disk: n.disk, ...(n.zone ? { [ZONE]: n.zone } : {}) },
          spec: {
            ...(n.cordoned ? { unschedulable: true } : {}),
            ...(n.taint ? { taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }] } : {}),
          },
        }),
      ),
      ...w.existing.map((e, i) =>
        pod(`existing-${i}`, { ...specOf(e.shape, true), nodeName: names[e.node % names.length] }),
      ),
    ],
    probes: w.probes.map((s, i) => pod(`probe-${i}`, specOf(s, false))),
    simulate: {
      template: {
        labels: { app: 'replica' },
        spec: w.template.anti ? { affinity: antiAffinity('replica', HOST) } : {},
        containers: [
          {
            name: 'c',
            image: 'nginx',
            resources: { requests: { cpu: w.template.cpu } },
            ...(w.template.port ? { ports: [{ containerPort: 80, hostPort: 9100 }] } : {}),
          },
        ],
      },
      replicas: 6,
    },
  };
}

const SEED = process.env.EXPLAIN_E2E_SEED ? Number(process.env.EXPLAIN_E2E_SEED) : Math.floor(Math.random() * 2 ** 31);

let plane: ControlPlane;

type Meta = KubeObject['metadata'] & { labels?: Record<string, string>; ownerReferences?: OwnerReference[] };
type PodObject = KubeObject & { metadata: Meta; spec: Pod['spec']; status?: Pod['status'] };

/** Every kind the extender reads, as `apiVersion/Kind` for KubeApi. */
const KIND_REFS = KINDS.map((k) => `${API_RESOURCES[k].apiVersion}/${k}`);
/** What a scenario leaves behind and the next one must not find (Namespaces stay: no namespace controller runs). */
const SCENARIO_KINDS = [
  'v1/Pod',
  'v1/Node',
  'v1/Service',
  'v1/ReplicationController',
  'apps/v1/ReplicaSet',
  'apps/v1/StatefulSet',
];

/** An empty cluster for the next scenario: everything it made is deleted at once (no kubelet to wait for). */
async function reset(api: KubeApi): Promise<void> {
  for (const ref of SCENARIO_KINDS) {
    const left = (await api.list(ref, null)).filter(
      (o) => !(o.kind === 'Service' && o.metadata.namespace === 'default' && o.metadata.name === 'kubernetes'),
    );
    await Promise.all(left.map((o) => api.delete(o, 0)));
  }
  await waitFor('the previous scenario cleaned up', async () => {
    for (const ref of ['v1/Pod', 'v1/Node']) if ((await api.list(ref, null)).length > 0) return false;
    return true;
  });
}

/**
 * `o` as a user creates it for a real API server: a Namespace that exists is relabelled, a placeholder owner uid is
 * the owner's real one, a pod's preemptionPolicy comes from a PriorityClass and its overhead from a RuntimeClass
 * (both made here first). Returns the object to create, or undefined when it was applied already.
 */
async function asCreated(api: KubeApi, o: KubeObject): Promise<KubeObject | undefined> {
  if (o.kind === 'Namespace') {
    const existing = await api.get('Namespace', o.metadata.name);
    if (!existing) return o;
    await api.patch(existing, { metadata: { labels: o.metadata.labels ?? {} } });
    return undefined;
  }
  if (o.kind !== 'Pod') return o;
  const pod = structuredClone(o) as PodObject;
  for (const ref of pod.metadata.ownerReferences ?? []) {
    const owner = await api.get(`${ref.apiVersion}/${ref.kind}`, ref.name, pod.metadata.namespace);
    if (!owner) throw new Error(`pod ${pod.metadata.name}: its owner ${ref.kind} ${ref.name} does not exist`);
    ref.uid = owner.metadata.uid as string;
  }
  const spec = pod.spec as Pod['spec'] & { runtimeClassName?: string };
  if (spec.preemptionPolicy && !spec.priorityClassName) {
    const name = `preempt-${spec.preemptionPolicy.toLowerCase()}`;
    if (!(await api.get('PriorityClass', name)))
      await api.create({
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name },
        value: 0,
        preemptionPolicy: spec.preemptionPolicy,
      });
    spec.priorityClassName = name;
  }
  if (spec.overhead && !spec.runtimeClassName) {
    const name = `overhead-${Object.entries(spec.overhead)
      .map(([k, v]) => `${k}-${v}`)
      .join('-')
      .toLowerCase()}`;
    if (!(await api.get('node.k8s.io/v1/RuntimeClass', name)))
      await api.create({
        apiVersion: 'node.k8s.io/v1',
        kind: 'RuntimeClass',
        metadata: { name },
        handler: 'runc',
        overhead: { podFixed: spec.overhead },
      });
    spec.runtimeClassName = name;
  }
  return pod;
}

async function add(api: KubeApi, ...objects: KubeObject[]): Promise<void> {
  for (const o of objects) {
    const made = await asCreated(api, o);
    if (made) await api.create(made);
  }
}

// Where kube-scheduler decides differently from what explain and simulate model, a case that differs only so is
// reported TODO, with the difference; any other difference still fails it.
/**
 * From v1.36 NodeResourcesBalancedAllocation scores how much a pod improves the node's balance (the score with the pod
 * against the score without it, noderesources/balanced_allocation.go) instead of the balance with the pod: the
 * default-spreading scenarios then put every replica on the small node, where v1.35 (and simulate) puts the last one
 * on the big node.
 */
const defaultSpreadPlacementsDiffer = (minor: number) => minor >= 36;

/** Runs `scenario` against `binary`: every probe's verdict, then the replicas. */
async function check(binary: KubeSchedulerBinary, scenario: Scenario, t: TestContext): Promise<void> {
  const minor = Number(binary.version.split('.')[1]);
  const known: string[] = [];
  const api = plane.admin;
  const dir = await tempDir('e2e-explain-');
  await reset(api);
  await add(api, ...scenario.cluster);
  const ks = await startKubeScheduler(binary, dir, {
    kubeconfig: plane.schedulerKubeconfig,
    schedulerName: SCHEDULER,
    podInitialBackoffSeconds: 1,
    podMaxBackoffSeconds: 1,
  });
  const where = (what: string) =>
    `${scenario.context ? `${scenario.context}: ` : ''}${what} (kube-scheduler ${binary.version})`;
  try {
    /** The API server's objects as a cluster-state file, for the CLI. */
    const dump = async () => {
      const file = join(dir, `state-${process.hrtime.bigint()}.yaml`);
      const items = (await Promise.all(KIND_REFS.map((ref) => api.list(ref, null)))).flat();
      await writeFile(file, stringify({ apiVersion: 'v1', kind: 'List', items }));
      return file;
    };
    /** kube-scheduler's verdict on the pod: the node it bound, or its PodScheduled message. */
    const verdict = (name: string) =>
      waitFor(
        where(`kube-scheduler's verdict on ${name}`),
        async () => {
          const p = await api.get<PodObject>('Pod', name, 'default');
          if (p?.spec.nodeName) return { bound: p.spec.nodeName };
          const c = (p?.status?.conditions as { type: string; message?: string }[] | undefined)?.find(
            (x) => x.type === 'PodScheduled',
          );
          return c?.message ? { message: c.message } : undefined;
        },
        60_000,
      );
    for (const probe of scenario.probes) {
      const name = probe.metadata.name;
      // The classes it needs first, then the cluster as kube-scheduler finds it (the earlier probes it bound
      // included), then the pod, and the pod as the API server stored it as the manifest.
      const toCreate = (await asCreated(api, probe))!;
      const state = await dump();
      const made = await api.create(toCreate);
      const manifest = join(dir, `${name}.yaml`);
      await writeFile(manifest, stringify(made));
      const real = await verdict(name);
      const ours = JSON.parse(
        await analyze('explain', [
          '-f',
          manifest,
          '--cluster-state',
          state,
          '--kube-version',
          binary.version,
          '-o',
          'json',
        ]),
      );
      if ('bound' in real) {
        const fits = (ours.nodes as { name: string; verdict: string }[]).filter((n) => n.verdict === 'Fits');
        assert.ok(
          fits.some((n) => n.name === real.bound),
          where(`${name}: kube-scheduler bound it to ${real.bound}; explain says ${ours.summary}`),
        );
      } else {
        assert.equal(ours.summary, real.message, where(`${name}: explain's summary is kube-scheduler's message`));
        await api.delete(made, 0);
      }
    }
    if (scenario.simulate) {
      const { template, replicas } = scenario.simulate;
      const replica = (await asCreated(api, pod('replica', template)))!;
      const state = await dump();
      const manifest = join(dir, 'replica.yaml');
      await writeFile(manifest, stringify(replica));
      const simulated = JSON.parse(
        await analyze('simulate', [
          '-f',
          manifest,
          '--replicas',
          String(replicas),
          '--cluster-state',
          state,
          '-o',
          'json',
        ]),
      );
      for (let i = 0; i < replicas; i++) await add(api, pod(`replica-${i}`, template));
      const perNode: Record<string, number> = {};
      for (let i = 0; i < replicas; i++) {
        const v = await verdict(`replica-${i}`);
        if (v.bound) perNode[v.bound] = (perNode[v.bound] ?? 0) + 1;
      }
      const bound = Object.values(perNode).reduce((a, b) => a + b, 0);
      assert.equal(simulated.placed, bound, where(`simulate placed ${simulated.placed} of ${replicas} replicas`));
      if (scenario.simulate.placements) {
        const ours: Record<string, number> = {};
        for (const p of simulated.placements as { node: string }[]) ours[p.node] = (ours[p.node] ?? 0) + 1;
        const same = JSON.stringify(Object.entries(ours).sort()) === JSON.stringify(Object.entries(perNode).sort());
        if (!same && defaultSpreadPlacementsDiffer(minor)) {
          known.push(
            `simulate places ${JSON.stringify(ours)}, kube-scheduler ${binary.version} ${JSON.stringify(perNode)}`,
          );
        } else {
          assert.deepEqual(ours, perNode, where('simulate puts as many replicas on each node as kube-scheduler'));
        }
      }
    }
    if (known.length > 0) t.todo(`simulate scores as v1.35 does; known differences: ${known.join('; ')}`);
  } finally {
    await ks.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (!found.components) {
  test('explain and simulate agree with a real kube-scheduler', { skip: found.skip }, () => {});
} else {
  const { components } = found;
  before(async () => {
    plane = await startControlPlane(components);
  });
  after(() => plane?.stop());
  for (const binary of components.kubeSchedulers) {
    describe(`explain and simulate against kube-scheduler ${binary.version}`, () => {
      for (const scenario of [
        MIXED,
        SPREAD,
        AFFINITY,
        RESOURCES,
        defaultSpread('ReplicaSet'),
        defaultSpread('StatefulSet'),
        defaultSpread('Service'),
        NAMESPACES,
        randomScenario(SEED),
      ])
        test(scenario.name, (t) => check(binary, scenario, t));
    });
  }
}
