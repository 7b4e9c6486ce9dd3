// The pending report (GET /api/v1/pending, issue 33) under a real kube-scheduler: pods left Pending for different
// reasons, and for every one of them the report's line must be the PodScheduled message kube-scheduler wrote, byte for
// byte, and the grouped views must count each pod once, by the reason kube-scheduler's line gives for the most nodes,
// by workload and by the storage its unbound claims wait for.
//
// Four nodes: node-0 (zone-a) and node-1 (zone-b, disk=ssd, running pods `guard`) with 8 CPUs, node-2 (zone-c)
// tainted, node-3 (zone-a) with 2 CPUs; free 10Gi local PVs on node-0, node-1 and node-3; a CSI class with 20Gi of
// capacity in zones a and b and 1Ti in zone c (where only the tainted node is). Each pod fails for other reasons on
// different nodes, so most lines have several parts; a Deployment's three replicas make one workload of several pods.
//
// Every kube-scheduler release the suites run, in both registrations (fully delegated, the chart's default: its volume
// plugins off, the extender judges them; filter-only: its own volume plugins run), each with its own schedulerName and
// namespace, so that the report's views of one namespace are that kube-scheduler's pods alone. Their lines differ
// (a release's PostFilter tail; what delegation changes), so each takes its turn: the extender is restarted as its
// operator runs it (--delegated-volume-binding or not) in a cluster of that release, the API proxy answering /version
// as that release's API server would (the extender names the minor it reads there at start).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type PendingAnswer, stripNumbers } from '../../src/ops/pending.ts';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import type { KubeObject } from '../components/kube-api.ts';
import * as build from '../helpers/objects.ts';
import { type KubeSchedulerProcess, kubeSchedulers } from './kube-scheduler.ts';
import {
  CSI_CLASS,
  CSI_DRIVER,
  clusterNode,
  HOSTNAME,
  LOCAL_CLASS,
  localPV,
  type SchedulerCluster,
  startSchedulerCluster,
  ZONE,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();

const REGISTRATIONS = ['delegated', 'scheduler-binds'] as const;
type Registration = (typeof REGISTRATIONS)[number];

const IMMEDIATE_CLASS = 'immediate';
const TAINT = { key: 'dedicated', value: 'infra', effect: 'NoSchedule' };
const RS = 'web-5d8f7c9b6';
const RS_HASH = '5d8f7c9b6';
const REPLICAS = 3;

/** The kube-scheduler's schedulerName, which is also the namespace of its pods. */
const namespaceOf = (version: string, registration: Registration) =>
  `pending-${version.replaceAll('.', '-')}-${registration === 'delegated' ? 'delegated' : 'filter-only'}`;

function clusterObjects(): KubeObject[] {
  const small = clusterNode('node-3', 'zone-a');
  const allocatable = { cpu: '2', memory: '32Gi', pods: '110' };
  Object.assign(small[0], { status: { ...(small[0].status as object), allocatable, capacity: allocatable } });
  const tainted = clusterNode('node-2', 'zone-c');
  Object.assign(tainted[0], { spec: { taints: [TAINT] } });
  return [
    ...clusterNode('node-0', 'zone-a'),
    ...clusterNode('node-1', 'zone-b', { disk: 'ssd' }),
    ...tainted,
    ...small,
    created(build.makeStorageClass(LOCAL_CLASS)),
    created(build.makeStorageClass(IMMEDIATE_CLASS, { mode: 'Immediate' })),
    created(build.makeStorageClass(CSI_CLASS, { provisioner: CSI_DRIVER })),
    created(build.makeCSIDriver(CSI_DRIVER, { storageCapacity: true, attachRequired: true })),
    ...Object.entries({ a: '20Gi', b: '20Gi', c: '1Ti' }).map(([z, capacity]) =>
      created(
        build.makeCSIStorageCapacity(`capacity-zone-${z}`, {
          namespace: 'kube-system',
          className: CSI_CLASS,
          capacity,
          nodeTopology: { matchLabels: { [ZONE]: `zone-${z}` } },
        }),
      ),
    ),
    localPV('free-node-0', 'node-0'),
    localPV('free-node-1', 'node-1'),
    localPV('free-node-3', 'node-3'),
  ];
}

/** A claim of `className` in `namespace`; `volumeName` pre-binds it (the PV controller completes the binding). */
function claim(namespace: string, name: string, className: string, size: string, volumeName?: string): KubeObject {
  return created(
    build.makePVC(name, {
      namespace,
      className,
      size,
      volumeName,
      spec: { accessModes: ['ReadWriteOnce'] },
    }),
  );
}

/**
 * What one namespace holds before its pods come: its claims, a PV on node-0 bound to one of them, the Deployment's
 * ReplicaSet, and the running pod `guard` on node-1.
 */
function namespaceObjects(ns: string): KubeObject[] {
  const boundPV = localPV(`${ns}-on-node-0`, 'node-0');
  (boundPV.spec as { claimRef?: object }).claimRef = {
    kind: 'PersistentVolumeClaim',
    namespace: ns,
    name: 'on-node-0',
  };
  const labels = { app: 'web', 'pod-template-hash': RS_HASH };
  const guard = build.makePod('guard', {
    namespace: ns,
    nodeName: 'node-1',
    labels: { app: 'guard' },
    startTime: '2026-01-01T00:00:00Z',
    containers: [{ name: 'app', image: 'nginx', resources: { requests: { cpu: '100m', memory: '64Mi' } } }],
  });
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    boundPV,
    claim(ns, 'on-node-0', LOCAL_CLASS, '5Gi', `${ns}-on-node-0`),
    claim(ns, 'too-large', LOCAL_CLASS, '50Gi'),
    claim(ns, 'too-large-2', LOCAL_CLASS, '50Gi'),
    claim(ns, 'csi-100', CSI_CLASS, '100Gi'),
    claim(ns, 'immediate', IMMEDIATE_CLASS, '5Gi'),
    {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: RS, namespace: ns, labels },
      spec: {
        replicas: REPLICAS,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'app', image: 'nginx' }] } },
      },
    },
    created(guard),
  ];
}

interface PodOptions {
  cpu?: string;
  priority?: number;
  claims?: string[];
  labels?: Record<string, string>;
  nodeSelector?: Record<string, string>;
  affinity?: object;
  ownerReferences?: object[];
}

function pendingPod(ns: string, name: string, o: PodOptions = {}): KubeObject {
  const pod = build.makePod(name, {
    namespace: ns,
    schedulerName: ns,
    labels: o.labels ?? { app: name },
    claims: o.claims,
    priority: o.priority,
    containers: [{ name: 'app', image: 'nginx', resources: { requests: { cpu: o.cpu ?? '100m', memory: '64Mi' } } }],
  });
  if (o.nodeSelector) pod.spec.nodeSelector = o.nodeSelector;
  if (o.affinity) Object.assign(pod.spec, { affinity: o.affinity });
  const made = created(pod);
  if (o.ownerReferences) Object.assign(made.metadata, { ownerReferences: o.ownerReferences });
  return made;
}

/** The pods of one namespace, each Pending for its own mix of reasons (per node, in the comments). */
function pendingPods(ns: string, rsUid: string): KubeObject[] {
  const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: RS, uid: rsUid, controller: true };
  return [
    // node-2: taint; every other node: Insufficient cpu.
    pendingPod(ns, 'cpu-hog', { cpu: '16' }),
    // node-2: taint; the others: node selector.
    pendingPod(ns, 'selector', { nodeSelector: { disk: 'hdd' } }),
    // node-2: taint; node-0 and node-3: node selector; node-1: its PV is on node-0 (volume node affinity).
    pendingPod(ns, 'volume-affinity', { claims: ['on-node-0'], nodeSelector: { [ZONE]: 'zone-b' } }),
    // node-2: taint; the others: no free PV of 50Gi.
    pendingPod(ns, 'no-volume', { claims: ['too-large'] }),
    // node-2: taint; the others: 20Gi of CSIStorageCapacity in zones a and b for 100Gi.
    pendingPod(ns, 'no-storage', { claims: ['csi-100'] }),
    // An unbound claim of an Immediate class: upstream rejects the pod in VolumeBinding's PreFilter.
    pendingPod(ns, 'immediate', { claims: ['immediate'] }),
    // node-2: taint; node-3: Insufficient cpu; node-0: no free PV of 50Gi; node-1: both that and the bound claim's PV
    // on node-0 (two reasons of one plugin on one node).
    pendingPod(ns, 'two-claims', { cpu: '3', claims: ['on-node-0', 'too-large-2'] }),
    // node-2: taint; node-0, node-3: node selector; node-1: guard's pod anti-affinity and the PV on node-0, where
    // upstream's VolumeBinding filter comes before InterPodAffinity.
    pendingPod(ns, 'anti-affinity', {
      claims: ['on-node-0'],
      nodeSelector: { [ZONE]: 'zone-b' },
      affinity: {
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { labelSelector: { matchLabels: { app: 'guard' } }, topologyKey: HOSTNAME },
          ],
        },
      },
    }),
    // Of priority 100. node-2: taint; node-0, node-3: node selector; node-1: Insufficient cpu, which evicting the
    // guards (priority 0) would fix, but not its claim's PV on node-0. Fully delegated, kube-scheduler's dry run
    // finds node-1 and the extender's preempt verb drops it; filter-only, its own dry run stops at VolumeBinding.
    pendingPod(ns, 'preemptor', {
      cpu: '7950m',
      priority: 100,
      claims: ['on-node-0'],
      nodeSelector: { [ZONE]: 'zone-b' },
    }),
    // A Deployment's replicas: one workload, three pods. node-2: taint; the others: Insufficient cpu.
    ...Array.from({ length: REPLICAS }, (_, i) =>
      pendingPod(ns, `${RS}-r${i}`, {
        cpu: '12',
        labels: { app: 'web', 'pod-template-hash': RS_HASH },
        ownerReferences: [owner],
      }),
    ),
  ];
}

type ReportItem = PendingAnswer['items'][number];
type Report = PendingAnswer;

type PodObject = KubeObject & {
  spec: { nodeName?: string };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
};

/** The pods' PodScheduled messages (reason Unschedulable), by name, once kube-scheduler wrote one for each. */
async function messagesOf(cluster: SchedulerCluster, ns: string, count: number, what: string) {
  return waitFor(
    what,
    async () => {
      const pods = (await cluster.api.list<PodObject>('Pod', ns)).filter((p) => p.metadata.name !== 'guard');
      const bound = pods.filter((p) => p.spec.nodeName).map((p) => `${p.metadata.name} on ${p.spec.nodeName}`);
      assert.deepEqual(bound, [], 'no pod of the scenario fits a node');
      const byName = new Map<string, string>();
      for (const p of pods) {
        const c = p.status?.conditions?.find((x) => x.type === 'PodScheduled');
        if (c?.status === 'False' && c.reason === 'Unschedulable' && c.message) byName.set(p.metadata.name, c.message);
      }
      return byName.size === count ? byName : undefined;
    },
    60_000,
  );
}

/**
 * The reason kube-scheduler's line gives for the most nodes (the bytewise smallest among equals), numbers stripped:
 * the FitError's "<count> <reason>" entries, or the preFilter's message, which stands for every node.
 */
function mostNodesReason(message: string): string {
  const histogram = /^0\/\d+ nodes are available: (.*?)\.(?: |$)/.exec(message)?.[1];
  assert.ok(histogram, `not a FitError line: ${message}`);
  const entries = histogram.split(/, (?=\d+ )/).map((e) => /^(\d+) (.*)$/.exec(e));
  if (entries.some((e) => !e)) return stripNumbers(histogram);
  const [best] = entries
    .map((e) => ({ count: Number(e![1]), reason: e![2] }))
    .sort((a, b) => b.count - a.count || (a.reason < b.reason ? -1 : 1));
  return stripNumbers(best.reason);
}

/** The pods of each group of a grouped view, by its key. */
function members(items: ReportItem[], keyOf: (i: ReportItem) => string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const i of items) out.set(keyOf(i), [...(out.get(keyOf(i)) ?? []), `${i.namespace}/${i.name}`]);
  return out;
}

if (found.skip) {
  test("the pending report's lines are kube-scheduler's PodScheduled messages", { skip: found.skip }, () => {});
} else {
  const namespaces = found.binaries.flatMap((b) => REGISTRATIONS.map((r) => namespaceOf(b.version, r)));
  let cluster: SchedulerCluster;
  before(async () => {
    cluster = await startSchedulerCluster([...clusterObjects(), ...namespaces.flatMap(namespaceObjects)]);
    // Pre-bound by name: the PV controller completes the binding (bind-completed), so the claim counts as bound.
    await waitFor(
      'the PV controller bound every pre-bound claim',
      async () => {
        for (const ns of namespaces) {
          const pvc = await cluster.api.get('PersistentVolumeClaim', 'on-node-0', ns);
          if ((pvc?.status as { phase?: string } | undefined)?.phase !== 'Bound') return false;
        }
        return true;
      },
      60_000,
    );
  });
  after(() => cluster?.stop());

  const report = async (ns: string, by?: string): Promise<Report> => {
    const query = new URLSearchParams({ namespace: ns, ...(by ? { by } : {}) });
    const res = await fetch(`${cluster.extender.url}/api/v1/pending?${query}`);
    const body = await res.text();
    assert.equal(res.status, 200, body);
    return JSON.parse(body) as Report;
  };

  for (const binary of found.binaries) {
    for (const registration of REGISTRATIONS) {
      const ns = namespaceOf(binary.version, registration);
      describe(`kube-scheduler ${binary.version}, ${registration === 'delegated' ? 'fully delegated' : 'filter-only'}`, () => {
        let ks: KubeSchedulerProcess | undefined;
        let written: Map<string, string>;
        before(async () => {
          // The extender as this registration's operator runs it, in a cluster of this release (it reads the minor
          // from /version at start).
          cluster.proxy.serveVersion(binary.version);
          await cluster.restartExtender({
            extenderArgs: [
              '--pending-report',
              '--scheduler-names',
              namespaces.join(','),
              ...(registration === 'delegated' ? ['--delegated-volume-binding'] : []),
            ],
          });
          ks = await cluster.scheduler(binary, ns, { mode: registration, nodeCacheCapable: true });
          const rs = await cluster.api.get('apps/v1/ReplicaSet', RS, ns);
          const pods = pendingPods(ns, rs!.metadata.uid as string);
          await cluster.add(...pods);
          written = await messagesOf(cluster, ns, pods.length, `kube-scheduler ${binary.version} tried every pod`);
        });
        after(() => ks?.stop());

        test("every pending pod's line in the report is its PodScheduled message, byte for byte", async () => {
          // Caught up: every pending pod explained with the current state; then the lines, read again while they
          // differ (a retry of kube-scheduler's may rewrite a message), until the deadline shows what still differs.
          let ours: Record<string, string> = {};
          let theirs: Record<string, string> = {};
          let behind = 'not read yet';
          const same = () => JSON.stringify(ours) === JSON.stringify(theirs);
          await waitFor(
            'the report caught up with every pod and its lines are the messages',
            async () => {
              const r = await report(ns);
              behind = `${r.notExplainedYet} pod(s) not explained yet, ${r.refreshing} being refreshed`;
              if (r.notExplainedYet > 0 || r.refreshing > 0) return false;
              behind = '';
              ours = Object.fromEntries(r.items.map((i) => [i.name, i.summary]));
              theirs = Object.fromEntries(
                [...(await messagesOf(cluster, ns, written.size, 'the messages'))].sort(([a], [b]) => (a < b ? -1 : 1)),
              );
              return same();
            },
            30_000,
          ).catch(() => {});
          assert.equal(behind, '', 'the report caught up');
          assert.deepEqual(ours, theirs);
        });

        test('the grouped views count every pending pod once, by the reason of its line, its workload and its storage', async () => {
          const all = await report(ns);
          assert.equal(all.pods, written.size);
          assert.deepEqual(all.items.map((i) => i.name).sort(), [...written.keys()].sort());
          for (const item of all.items) {
            // Each node counted once, under the plugin that rejected it: as many as the line's "0/N".
            const nodes = Number(/^0\/(\d+) nodes/.exec(written.get(item.name)!)?.[1]);
            const plugins = Object.values(item.plugins).reduce((a, b) => a + b, 0);
            assert.equal(plugins, nodes, `${item.name}: ${JSON.stringify(item.plugins)}`);
            assert.equal(item.reason, mostNodesReason(written.get(item.name)!), item.name);
          }
          const groupings = {
            reason: (i: ReportItem) => i.reason,
            workload: (i: ReportItem) => `${i.namespace}/${i.workload}`,
            zone: (i: ReportItem) => {
              const classes = new Set(i.claims.filter((c) => c.zonesWithRoom).map((c) => c.storageClass));
              return classes.size === 0 ? '-' : [...classes].sort().join(',');
            },
          };
          for (const [by, keyOf] of Object.entries(groupings)) {
            const { groups = [], pods } = await report(ns, by);
            assert.equal(pods, written.size, by);
            assert.equal(
              groups.reduce((n, g) => n + g.pods, 0),
              pods,
              `by ${by}: the groups hold every pod`,
            );
            const expected = members(all.items, keyOf);
            assert.deepEqual(
              groups.map((g) => [g.key, g.pods]).sort(),
              [...expected].map(([k, m]) => [k, m.length]).sort(),
              `by ${by}: one group per key, with its pods`,
            );
            for (const g of groups) {
              for (const e of g.examples) assert.ok(expected.get(g.key)!.includes(e), `by ${by}: ${e} in ${g.key}`);
              for (const [zone, n] of Object.entries(g.zonesWithRoom ?? {}))
                assert.ok(n <= g.pods, `by ${by}: ${zone} has room for ${n} of ${g.key}'s ${g.pods} pods`);
            }
            assert.deepEqual(
              groups.map((g) => g.pods),
              groups.map((g) => g.pods).sort((a, b) => b - a),
              `by ${by}: largest group first`,
            );
          }
          // The Deployment's replicas make one workload; every other pod is its own.
          const { groups: byWorkload = [] } = await report(ns, 'workload');
          const deployment = byWorkload.find((g) => g.key === `${ns}/Deployment/web`);
          assert.equal(deployment?.pods, REPLICAS, JSON.stringify(byWorkload));
          assert.ok(
            byWorkload.filter((g) => g !== deployment).every((g) => g.pods === 1 && g.key.startsWith(`${ns}/Pod/`)),
          );
          // By reason: as many pods, of as many workloads, as kube-scheduler's lines give the reason for the most nodes.
          const workloadOf = (name: string) => (name.startsWith(`${RS}-`) ? 'Deployment/web' : `Pod/${name}`);
          const byLine = new Map<string, string[]>();
          for (const [name, message] of written)
            byLine.set(mostNodesReason(message), [...(byLine.get(mostNodesReason(message)) ?? []), name]);
          const { groups: byReason = [] } = await report(ns, 'reason');
          assert.deepEqual(
            byReason.map((g) => [g.key, g.pods, g.workloads]).sort(),
            [...byLine].map(([reason, names]) => [reason, names.length, new Set(names.map(workloadOf)).size]).sort(),
          );
          // The Deployment's replicas and cpu-hog: one reason, two workloads, the plugin most of them name.
          const cpu = byReason.find((g) => g.key === 'Insufficient cpu');
          assert.ok(cpu && cpu.pods > REPLICAS && cpu.workloads! >= 2, JSON.stringify(byReason));
          assert.equal(cpu.plugin, 'NodeResourcesFit');
          // By zone: only zone-c's CSIStorageCapacity admits the 100Gi claim; no zone has a free 50Gi local PV.
          const { groups: byZone = [] } = await report(ns, 'zone');
          assert.deepEqual(
            byZone.find((g) => g.key === CSI_CLASS)?.zonesWithRoom,
            { 'zone-c': 1 },
            JSON.stringify(byZone),
          );
          assert.deepEqual(byZone.find((g) => g.key === LOCAL_CLASS)?.zonesWithRoom, {}, JSON.stringify(byZone));
        });
      });
    }
  }
}
