// The fixture of the real-kube-scheduler end-to-end tests: a fake API server holding a small cluster, the simulated
// volume controllers, the extender as a process (the real CLI), a recording proxy in front of it, and kube-schedulers
// started per registration, each with its own schedulerName so that several can share the cluster.
import { rm } from 'node:fs/promises';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import * as build from '../helpers/objects.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { type ExtenderProcess, startExtender } from './extender-process.ts';
import { FakeApiServer, type FakeObject, writeKubeconfig } from './fake-apiserver.ts';
import {
  type ExtenderRegistration,
  type KubeSchedulerBinary,
  type KubeSchedulerProcess,
  startKubeScheduler,
} from './kube-scheduler.ts';
import { startVerbRecorder, type VerbRecorder } from './verb-recorder.ts';
import { startVolumeControllers, type VolumeControllers } from './volume-controllers.ts';

export const ZONE = 'topology.kubernetes.io/zone';
export const HOSTNAME = 'kubernetes.io/hostname';
export const CSI_DRIVER = 'csi.example.com';
/** Statically provisioned local PVs (no provisioner), WaitForFirstConsumer. */
export const LOCAL_CLASS = 'local';
/** A capacity-tracked CSI class, WaitForFirstConsumer, provisioned per zone. */
export const CSI_CLASS = 'csi-wffc';
const ALLOCATABLE = { cpu: '8', memory: '32Gi', pods: '110' };

/** A Ready node in `zone` with 8 CPUs and room for 110 pods, and its CSINode with the CSI driver's topology key. */
export function clusterNode(name: string, zone: string, labels: Record<string, string> = {}): FakeObject[] {
  return [
    created(
      build.makeNode(name, {
        zone,
        labels,
        allocatable: ALLOCATABLE,
        status: { capacity: ALLOCATABLE, conditions: [{ type: 'Ready', status: 'True' }] },
      }),
    ),
    created(build.makeCSINode(name, { drivers: [{ name: CSI_DRIVER, nodeID: name, topologyKeys: [ZONE] }] })),
  ];
}

/** `count` nodes over zones a, b, c (clusterNode), with the storage classes, the CSI driver and its capacity. */
export function clusterObjects(count = 3): FakeObject[] {
  const nodes = Array.from({ length: count }, (_, i) => clusterNode(`node-${i}`, `zone-${'abc'[i % 3]}`)).flat();
  return [
    ...nodes,
    created(build.makeStorageClass(LOCAL_CLASS)),
    created(build.makeStorageClass(CSI_CLASS, { provisioner: CSI_DRIVER })),
    created(build.makeCSIDriver(CSI_DRIVER, { storageCapacity: true, attachRequired: true })),
    ...['a', 'b', 'c'].map((z) =>
      created(
        build.makeCSIStorageCapacity(`capacity-zone-${z}`, {
          namespace: 'kube-system',
          className: CSI_CLASS,
          capacity: '1Ti',
          nodeTopology: { matchLabels: { [ZONE]: `zone-${z}` } },
        }),
      ),
    ),
  ];
}

/** A free local PV of `className` (a statically provisioned class: LOCAL_CLASS or a case's own) on `node`. */
export function localPV(name: string, node: string, size = '10Gi', className = LOCAL_CLASS): FakeObject {
  return created(
    build.makePV(name, {
      className,
      size,
      phase: 'Available',
      affinity: { [HOSTNAME]: [node] },
      spec: {
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        local: { path: `/mnt/${name}` },
      },
    }),
  );
}

/** An unbound claim of `className`. */
export function claim(name: string, className: string, size = '5Gi'): FakeObject {
  return created(build.makePVC(name, { className, size, phase: 'Pending', spec: { accessModes: ['ReadWriteOnce'] } }));
}

interface PodOptions {
  claims?: string[];
  priority?: number;
  cpu?: string;
  labels?: Record<string, string>;
}

function podOf(name: string, o: PodOptions & { schedulerName?: string; nodeName?: string; startTime?: string }) {
  return build.makePod(name, {
    schedulerName: o.schedulerName,
    nodeName: o.nodeName,
    startTime: o.startTime,
    labels: o.labels ?? { app: name },
    claims: o.claims,
    priority: o.priority,
    containers: [{ name: 'app', image: 'nginx', resources: { requests: { cpu: o.cpu ?? '100m', memory: '64Mi' } } }],
  });
}

/** A pending pod for `schedulerName` using `claims`; `nodeSelector` confines it (and its preemption) to some nodes. */
export function pendingPod(
  name: string,
  schedulerName: string,
  o: PodOptions & { nodeSelector?: Record<string, string> } = {},
): FakeObject {
  const pod = podOf(name, { ...o, schedulerName });
  if (o.nodeSelector) pod.spec!.nodeSelector = o.nodeSelector;
  return created(pod);
}

/** A pod already running on `node` (no scheduler involved), started at `startTime` (a preemption victim's order). */
export function runningPod(name: string, node: string, o: PodOptions & { startTime?: string } = {}): FakeObject {
  return created(podOf(name, { ...o, nodeName: node, startTime: o.startTime ?? '2026-01-01T00:00:00Z' }));
}

export interface SchedulerCluster {
  server: FakeApiServer;
  extender: ExtenderProcess;
  recorder: VerbRecorder;
  controllers: VolumeControllers;
  kubeconfig: string;
  dir: string;
  /** Starts a kube-scheduler for `schedulerName`, registered with the extender (through the recorder) as `registration`. */
  scheduler(
    binary: KubeSchedulerBinary,
    schedulerName: string,
    registration: Omit<ExtenderRegistration, 'url'> | undefined,
    extraArgs?: string[],
  ): Promise<KubeSchedulerProcess>;
  /** Restarts the extender process on another port; the recorder keeps kube-scheduler's URL. */
  restartExtender(): Promise<void>;
  /** Stops the extender: kube-scheduler's calls through the recorder are refused until startExtender(). */
  stopExtender(): Promise<void>;
  /**
   * Starts a stopped extender again (another port; the recorder follows), by default waiting until it has listed the
   * cluster (/readyz); `{ ready: false }` returns once it listens (it answers 503 until then).
   */
  startExtender(o?: { ready?: boolean }): Promise<void>;
  /** The pod's node once bound (waits for it). */
  boundNode(name: string, timeoutMs?: number): Promise<string>;
  /** What kube-scheduler logged of a pod and what the extender answered about it: why it is not bound, if it is not. */
  whyNotBound(name: string): string;
  /** The pod's PodScheduled condition once kube-scheduler wrote it False, with a message containing `text` if given. */
  unschedulable(name: string, text?: string): Promise<PodCondition>;
  /** The FailedScheduling events kube-scheduler recorded for the pod (events.k8s.io/v1), once there is one. */
  failedScheduling(name: string): Promise<SchedulingEvent[]>;
  /** The pods our bind assumed and the watch has not confirmed yet (the extender's GET /api/v1/pods/assumed). */
  assumedPods(): Promise<{ namespace: string; name: string }[]>;
  stop(): Promise<void>;
}

export interface PodCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** Until it has listed the cluster the extender answers every verb 503: kube-scheduler would see errors. */
function extenderReady(extender: ExtenderProcess): Promise<boolean> {
  return waitFor('the extender has listed the cluster', async () => (await fetch(`${extender.url}/readyz`)).ok);
}

export interface SchedulingEvent {
  reason: string;
  note: string;
  regarding: { name: string; namespace?: string };
}

export interface SchedulerClusterOptions {
  /** Default 20: more than any wait in the tests, well under kube-scheduler's httpTimeout. */
  bindTimeoutSeconds?: number;
}

export async function startSchedulerCluster(
  objects: FakeObject[] = clusterObjects(),
  options: SchedulerClusterOptions = {},
): Promise<SchedulerCluster> {
  const EXTENDER_ARGS = ['--bind-timeout-seconds', String(options.bindTimeoutSeconds ?? 20)];
  const dir = await tempDir('e2e-kube-scheduler-');
  const server = new FakeApiServer({ bookmarkIntervalMs: 1_000 });
  await server.start();
  server.add(...objects);
  const controllers = startVolumeControllers(server);
  const kubeconfig = await writeKubeconfig(server.url, dir);
  let extender = await startExtender(kubeconfig, EXTENDER_ARGS);
  await extenderReady(extender);
  const recorder = await startVerbRecorder(extender.url);
  const schedulers: KubeSchedulerProcess[] = [];
  // A pod that never binds fails a test with what kube-scheduler logged of it and what the extender answered: on a
  // shared CI machine that is all there is to go on.
  const whyNotBound = (name: string) => {
    const logged = schedulers.flatMap((s) =>
      s
        .log()
        .split('\n')
        .filter((line) => line.includes(`"default/${name}"`)),
    );
    // A kube-scheduler that died (a panic, a fatal error) schedules nothing more: its last words.
    const exited = schedulers.flatMap((s) => {
      const { exitCode, signalCode } = s.child;
      if (exitCode === null && signalCode === null) return [];
      return [`a kube-scheduler exited (${exitCode ?? signalCode}):`, ...s.log().trimEnd().split('\n').slice(-10)];
    });
    const calls = recorder
      .callsFor(`default/${name}`)
      .map((c) => `${c.verb} ${c.status} ${JSON.stringify(c.answer)?.slice(0, 400)}`);
    return [
      'kube-scheduler logged of it:',
      ...logged.slice(-20),
      'the extender was asked:',
      ...calls.slice(-10),
      ...exited,
    ].join('\n');
  };
  const cluster: SchedulerCluster = {
    server,
    get extender() {
      return extender;
    },
    recorder,
    controllers,
    kubeconfig,
    dir,
    async scheduler(binary, schedulerName, registration, extraArgs = []) {
      const ks = await startKubeScheduler(
        binary,
        dir,
        { kubeconfig, schedulerName, extender: registration ? { ...registration, url: recorder.url } : undefined },
        extraArgs,
      );
      schedulers.push(ks);
      return ks;
    },
    async restartExtender() {
      await cluster.stopExtender();
      await cluster.startExtender();
    },
    async stopExtender() {
      await extender.stop();
    },
    async startExtender({ ready = true } = {}) {
      extender = await startExtender(kubeconfig, EXTENDER_ARGS);
      recorder.target = extender.url;
      if (ready) await extenderReady(extender);
    },
    async boundNode(name, timeoutMs = 60_000) {
      try {
        return await waitFor(
          `pod ${name} bound`,
          () => (server.get('Pod', name, 'default')?.spec as { nodeName?: string } | undefined)?.nodeName,
          timeoutMs,
        );
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${whyNotBound(name)}`);
      }
    },
    whyNotBound,
    unschedulable(name, text) {
      return waitFor(`pod ${name} unschedulable${text ? ` with "${text}"` : ''}`, () => {
        const pod = server.get('Pod', name, 'default') as { status?: { conditions?: PodCondition[] } } | undefined;
        const scheduled = pod?.status?.conditions?.find((c) => c.type === 'PodScheduled');
        if (scheduled?.status !== 'False') return undefined;
        return !text || scheduled.message?.includes(text) ? scheduled : undefined;
      });
    },
    failedScheduling(name) {
      return waitFor(`a FailedScheduling event of pod ${name}`, () => {
        const events = (server.list('events.k8s.io/v1/Event') as unknown as SchedulingEvent[]).filter(
          (e) => e.reason === 'FailedScheduling' && e.regarding?.name === name,
        );
        return events.length > 0 ? events : undefined;
      });
    },
    async assumedPods() {
      const res = await fetch(`${extender.url}/api/v1/pods/assumed`);
      if (!res.ok) throw new Error(`GET /api/v1/pods/assumed: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { items: { namespace: string; name: string }[] }).items;
    },
    async stop() {
      await Promise.all(schedulers.map((s) => s.stop()));
      controllers.stop();
      await recorder.stop();
      await extender.stop();
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}
