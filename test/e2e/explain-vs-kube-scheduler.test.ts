// Explain and simulate against the real thing: the same clusters in the fake API server, a real kube-scheduler (no
// extender, a schedulerName of its own) tries each pod, and its PodScheduled message must equal explain's summary byte
// for byte, computed on the same objects at the same moment; the replicas it schedules must equal simulate's count.
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { analyze } from '../../src/cli/analyze.ts';
import type { Pod } from '../../src/cluster/types.ts';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { FakeApiServer, type FakeObject, writeKubeconfig } from './fake-apiserver.ts';
import { type KubeSchedulerProcess, kubeSchedulers, startKubeScheduler } from './kube-scheduler.ts';

const found = await kubeSchedulers();
const KINDS = ['Node', 'Pod', 'PersistentVolume', 'PersistentVolumeClaim', 'StorageClass', 'CSINode', 'CSIDriver'];

function node(name: string, o: { labels?: Record<string, string>; spec?: object; pods?: string; cpu?: string } = {}) {
  const allocatable = { cpu: o.cpu ?? '2', memory: '4Gi', pods: o.pods ?? '110' };
  return created({
    kind: 'Node',
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: '1',
      labels: { 'kubernetes.io/hostname': name, ...o.labels },
    },
    spec: o.spec ?? {},
    status: { allocatable, capacity: allocatable, conditions: [{ type: 'Ready', status: 'True' }] },
  } as never);
}

function pod(name: string, scheduler: string, spec: Partial<Pod['spec']> = {}, cpu = '100m', labels = { app: name }) {
  return created({
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, resourceVersion: '1', labels },
    spec: {
      schedulerName: scheduler,
      containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu, memory: '64Mi' } } }],
      ...spec,
    },
    status: { phase: 'Pending' },
  } as never);
}

const CLUSTER = (): FakeObject[] => [
  node('n-taint', {
    labels: { 'topology.kubernetes.io/zone': 'a' },
    spec: { taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }] },
  }),
  node('n-cordoned', { labels: { 'topology.kubernetes.io/zone': 'a' }, spec: { unschedulable: true } }),
  node('n-full', { labels: { 'topology.kubernetes.io/zone': 'b' }, pods: '0' }),
  node('n-b', { labels: { 'topology.kubernetes.io/zone': 'b', disk: 'ssd' } }),
  node('n-c', { labels: { 'topology.kubernetes.io/zone': 'c' } }),
];

if (found.skip) {
  test('explain and simulate agree with a real kube-scheduler', { skip: found.skip }, () => {});
} else {
  const binary = found.binaries.find((b) => b.version.startsWith('v1.35')) ?? found.binaries[0];
  describe(`explain and simulate against kube-scheduler ${binary.version}`, () => {
    let server: FakeApiServer;
    let ks: KubeSchedulerProcess;
    let dir: string;
    const scheduler = 'explain-e2e';
    before(async () => {
      dir = await tempDir('e2e-explain-');
      server = new FakeApiServer({ bookmarkIntervalMs: 1_000 });
      await server.start();
      server.add(...CLUSTER());
      const kubeconfig = await writeKubeconfig(server.url, dir);
      ks = await startKubeScheduler(binary, dir, {
        kubeconfig,
        schedulerName: scheduler,
        podInitialBackoffSeconds: 1,
        podMaxBackoffSeconds: 1,
      });
    });
    after(async () => {
      await ks?.stop();
      await server?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    /** The API server's objects as a cluster-state file, for the CLI. */
    async function dump(): Promise<string> {
      const file = join(dir, `state-${process.hrtime.bigint()}.yaml`);
      const items = KINDS.flatMap((k) => server.list(k));
      await writeFile(file, stringify({ apiVersion: 'v1', kind: 'List', items }));
      return file;
    }

    /** kube-scheduler's verdict on the pod: the node it bound, or its PodScheduled message. */
    function verdict(name: string) {
      return waitFor(
        `kube-scheduler's verdict on ${name}`,
        () => {
          const p = server.get('Pod', name, 'default') as unknown as Pod | undefined;
          if (p?.spec.nodeName) return { bound: p.spec.nodeName };
          const c = (p?.status?.conditions as { type: string; message?: string }[] | undefined)?.find(
            (x) => x.type === 'PodScheduled',
          );
          return c?.message ? { message: c.message } : undefined;
        },
        60_000,
      );
    }

    const cases: { name: string; spec?: Partial<Pod['spec']>; cpu?: string }[] = [
      { name: 'too-big', cpu: '3' },
      { name: 'fits-partly', cpu: '1500m' },
      { name: 'selector', spec: { nodeSelector: { disk: 'hdd' } } },
      { name: 'never-preempts', spec: { preemptionPolicy: 'Never' }, cpu: '3' },
      {
        name: 'by-node-name',
        spec: {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n-taint'] }] }],
              },
            },
          },
        },
      },
      {
        name: 'affinity-to-nothing',
        spec: {
          affinity: {
            podAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: 'nothing' } }, topologyKey: 'topology.kubernetes.io/zone' },
              ],
            },
          },
        },
      },
      {
        name: 'missing-spread-key',
        spec: {
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'rack',
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchLabels: { app: 'x' } },
            },
          ],
        },
      },
    ];
    for (const c of cases) {
      test(`${c.name}: explain's summary is kube-scheduler's PodScheduled message`, async () => {
        // The cluster as kube-scheduler finds it (the earlier cases' pods included), and the pod as a manifest.
        const state = await dump();
        const manifest = join(dir, `${c.name}.yaml`);
        const object = pod(c.name, scheduler, c.spec, c.cpu);
        await writeFile(manifest, stringify(object));
        server.add(object);
        const real = await verdict(c.name);
        const ours = JSON.parse(await analyze('explain', ['-f', manifest, '--cluster-state', state, '-o', 'json']));
        if ('bound' in real)
          assert.ok(ours.feasibleNodes > 0, `kube-scheduler bound it to ${real.bound}; we found no node`);
        else assert.equal(ours.summary, real.message);
      });
    }

    test("simulate's replica count is the number kube-scheduler schedules", async () => {
      // Host ports make one replica per node: the ready, untainted, uncordoned nodes with room for a pod.
      const spec = {
        containers: [
          {
            name: 'c',
            image: 'nginx',
            ports: [{ containerPort: 80, hostPort: 8080 }],
            resources: { requests: { cpu: '100m' } },
          },
        ],
      };
      const template = pod('web', scheduler, spec);
      const file = await dump();
      const manifest = join(dir, 'web.yaml');
      await writeFile(manifest, stringify({ ...template, metadata: { name: 'web', namespace: 'default' } }));
      const simulated = JSON.parse(
        await analyze('simulate', ['-f', manifest, '--replicas', '4', '--cluster-state', file, '-o', 'json']),
      );
      for (let i = 0; i < 4; i++) server.add(pod(`web-${i}`, scheduler, spec, '100m', { app: 'web' }));
      const results = [];
      for (let i = 0; i < 4; i++) results.push(await verdict(`web-${i}`));
      assert.equal(simulated.placed, results.filter((r) => 'bound' in r).length);
    });
  });
}
