// The fixture of the real-kube-scheduler end-to-end tests: a real control plane (etcd, kube-apiserver,
// kube-controller-manager with its PV controller) holding a small cluster, a stand-in CSI external-provisioner, the
// extender as a process (the real CLI) authenticated as the chart's ServiceAccount with the chart's RBAC and reaching
// the API server through a fault-injecting proxy, a recording proxy in front of the extender, and kube-schedulers
// started per registration, each with its own schedulerName so that several can share the cluster.
import { rm } from 'node:fs/promises';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import { type ApiProxy, startApiProxy } from '../components/api-proxy.ts';
import { type Component, kubeComponents } from '../components/components.ts';
import {
  type ControlPlane,
  finishTerminatingPods,
  KWOK_NODE_LABEL,
  startControlPlane,
} from '../components/control-plane.ts';
import { type CsiProvisioner, startCsiProvisioner } from '../components/csi-provisioner.ts';
import type { KubeApi, KubeObject } from '../components/kube-api.ts';
import { renderChart } from '../helpers/chart.ts';
import * as build from '../helpers/objects.ts';
import { type ExtenderProcess, startExtender } from './extender-process.ts';
import {
  type ExtenderRegistration,
  type KubeSchedulerProcess,
  type SchedulerConfigOptions,
  startKubeScheduler,
} from './kube-scheduler.ts';
import { startVerbRecorder, type VerbRecorder } from './verb-recorder.ts';

export const ZONE = 'topology.kubernetes.io/zone';
export const HOSTNAME = 'kubernetes.io/hostname';
export const CSI_DRIVER = 'csi.example.com';
/** Statically provisioned local PVs (no provisioner), WaitForFirstConsumer. */
export const LOCAL_CLASS = 'local';
/** A capacity-tracked CSI class, WaitForFirstConsumer, provisioned per zone. */
export const CSI_CLASS = 'csi-wffc';
const ALLOCATABLE = { cpu: '8', memory: '32Gi', pods: '110' };

/** A Ready node in `zone` with 8 CPUs and room for 110 pods, and its CSINode with the CSI driver's topology key. */
export function clusterNode(name: string, zone: string, labels: Record<string, string> = {}): KubeObject[] {
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

/**
 * A node whose kubelet KWOK plays (the cluster needs `workloads`): it turns Ready, keeps its lease, runs the pods bound
 * to it and confirms their deletion, until its label is taken away: a kubelet that stops answering.
 */
export function kwokNode(name: string, zone: string, labels: Record<string, string> = {}): KubeObject[] {
  const [node, csiNode] = clusterNode(name, zone, { ...labels, [KWOK_NODE_LABEL]: 'fake' });
  node.status = { allocatable: ALLOCATABLE, capacity: ALLOCATABLE };
  return [node, csiNode];
}

/** `count` nodes over zones a, b, c (clusterNode), with the storage classes, the CSI driver and its capacity. */
export function clusterObjects(count = 3): KubeObject[] {
  const nodes = Array.from({ length: count }, (_, i) => clusterNode(`node-${i}`, `zone-${'abc'[i % 3]}`)).flat();
  return [...nodes, created(build.makeStorageClass(LOCAL_CLASS)), ...csiStorage()];
}

/** CSI_CLASS, its driver (capacity-tracked) and 1Ti of capacity in each of zones a, b, c. */
export function csiStorage(o: { attachRequired?: boolean } = {}): KubeObject[] {
  return [
    created(build.makeStorageClass(CSI_CLASS, { provisioner: CSI_DRIVER })),
    created(build.makeCSIDriver(CSI_DRIVER, { storageCapacity: true, attachRequired: o.attachRequired ?? true })),
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
export function localPV(name: string, node: string, size = '10Gi', className = LOCAL_CLASS): KubeObject {
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
export function claim(name: string, className: string, size = '5Gi'): KubeObject {
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
): KubeObject {
  const pod = podOf(name, { ...o, schedulerName });
  if (o.nodeSelector) pod.spec!.nodeSelector = o.nodeSelector;
  return created(pod);
}

/** A pod already running on `node` (no scheduler involved), started at `startTime` (a preemption victim's order). */
export function runningPod(name: string, node: string, o: PodOptions & { startTime?: string } = {}): KubeObject {
  return created(podOf(name, { ...o, nodeName: node, startTime: o.startTime ?? '2026-01-01T00:00:00Z' }));
}

/** A write the API server completed, from its audit log. */
export interface ApiWrite {
  /** Who made it: `system:kube-scheduler`, the extender's ServiceAccount (`system:serviceaccount:...`), ... */
  user: string;
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The request path without its query. */
  path: string;
  status: number;
}

/** Which of the chart's RBAC the extender runs with: its extender-mode ClusterRole with or without the bind rules. */
export type ExtenderRbac = 'delegated' | 'filter-only';

export interface SchedulerCluster {
  plane: ControlPlane;
  /** The tests' own hands on the API server (a cluster administrator). */
  api: KubeApi;
  /** Between the extender and the API server. */
  proxy: ApiProxy;
  extender: ExtenderProcess;
  recorder: VerbRecorder;
  provisioner: CsiProvisioner;
  /** The extender's kubeconfig: its ServiceAccount's token, through the proxy. */
  kubeconfig: string;
  /** The extender's user name as the API server sees it. */
  extenderUser: string;
  dir: string;
  /** Creates the objects in order, as a user would (a pod's fixed priority through a PriorityClass of that value). */
  add(...objects: KubeObject[]): Promise<void>;
  /** Every write the API server completed since the cluster started, oldest first. */
  writes(): Promise<ApiWrite[]>;
  /** Starts a kube-scheduler for `schedulerName`, registered with the extender (through the recorder) as `registration`. */
  scheduler(
    binary: Component,
    schedulerName: string,
    registration: Omit<ExtenderRegistration, 'url'> | undefined,
    extraArgs?: string[],
    config?: Pick<SchedulerConfigOptions, 'percentageOfNodesToScore'>,
  ): Promise<KubeSchedulerProcess>;
  /**
   * Restarts the extender process on another port; the recorder keeps kube-scheduler's URL. `extenderArgs` replace the
   * cluster's own (options.extenderArgs) from this start on.
   */
  restartExtender(o?: { extenderArgs?: string[] }): Promise<void>;
  /** Stops the extender: kube-scheduler's calls through the recorder are refused until startExtender(). */
  stopExtender(): Promise<void>;
  /**
   * Starts a stopped extender again (another port; the recorder follows), by default waiting until it has listed the
   * cluster (/readyz); `{ ready: false }` returns once it listens (it answers 503 until then).
   */
  startExtender(o?: { ready?: boolean; extenderArgs?: string[] }): Promise<void>;
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
  /** Default `delegated`. */
  rbac?: ExtenderRbac;
  /** More `serve` flags for the extender. */
  extenderArgs?: string[];
  /** The workload controllers, node life cycle and KWOK (ControlPlaneOptions.workloads); nodes from kwokNode. */
  workloads?: boolean;
}

const WRITE_METHODS: Record<string, ApiWrite['method']> = {
  create: 'POST',
  update: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  deletecollection: 'DELETE',
};

/** The real control plane's components; callers skip with `found.skip` first. */
async function components() {
  const { components, skip } = await kubeComponents();
  if (!components) throw new Error(skip);
  return components;
}

/**
 * The chart's ServiceAccount and RBAC for mode extender, created in the cluster; returns the ServiceAccount's
 * namespace and name.
 */
export async function installExtenderRbac(
  api: KubeApi,
  rbac: ExtenderRbac,
): Promise<{ namespace: string; name: string }> {
  const rendered = await renderChart([
    '--set',
    'mode=extender',
    '--set',
    `delegateVolumeBinding=${rbac === 'delegated'}`,
  ]);
  const kinds = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
  const objects = rendered.filter((o) => kinds.has(o.kind)) as unknown as KubeObject[];
  await api.createAll(objects);
  const account = objects.find((o) => o.kind === 'ServiceAccount');
  if (!account) throw new Error('the chart rendered no ServiceAccount');
  return { namespace: account.metadata.namespace ?? 'kube-system', name: account.metadata.name };
}

export async function startSchedulerCluster(
  objects: KubeObject[] = clusterObjects(),
  options: SchedulerClusterOptions = {},
): Promise<SchedulerCluster> {
  let extenderArgs = options.extenderArgs ?? [];
  const serveArgs = () => ['--bind-timeout-seconds', String(options.bindTimeoutSeconds ?? 20), ...extenderArgs];
  const plane = await startControlPlane(await components(), { workloads: options.workloads });
  const { api, dir } = { api: plane.admin, dir: plane.dir };
  const stops: (() => void | Promise<void>)[] = [() => plane.stop()];
  try {
    // Per value, the PriorityClass's creation: concurrent adds of one priority wait for the same one.
    const priorities = new Map<number, Promise<unknown>>();
    const add = async (...list: KubeObject[]) => {
      for (const o of list) {
        const spec = o.spec as { priority?: number; priorityClassName?: string } | undefined;
        if (o.kind === 'Pod' && spec?.priority !== undefined && !spec.priorityClassName) {
          // The API server's Priority admission refuses a bare priority: users get one through a PriorityClass.
          const value = spec.priority;
          if (!priorities.has(value)) {
            priorities.set(
              value,
              api.create({
                apiVersion: 'scheduling.k8s.io/v1',
                kind: 'PriorityClass',
                metadata: { name: `priority-${value}` },
                value,
              }),
            );
          }
          await priorities.get(value);
          const { priority: _, ...rest } = spec;
          await api.create({ ...o, spec: { ...rest, priorityClassName: `priority-${value}` } });
        } else {
          await api.create(o);
        }
      }
    };
    await add(...objects);
    // With workloads KWOK confirms the deletion of its nodes' pods, and nobody that of a lost node's, as in a cluster.
    if (!options.workloads) stops.push(await finishTerminatingPods(api));
    const provisioner = await startCsiProvisioner(api, CSI_DRIVER);
    stops.push(provisioner.stop);
    const account = await installExtenderRbac(api, options.rbac ?? 'delegated');
    const proxy = await startApiProxy(plane.url, plane.ca);
    stops.push(() => proxy.stop());
    const kubeconfig = await plane.serviceAccountKubeconfig(account.namespace, account.name, proxy.url);
    let extender = await startExtender(kubeconfig, serveArgs());
    stops.push(async () => {
      await extender.stop();
    });
    await extenderReady(extender).catch((err) => {
      throw new Error(
        `${err.message}\n${extender.logs
          .slice(-15)
          .map((l) => JSON.stringify(l).slice(0, 400))
          .join('\n')}`,
      );
    });
    const recorder = await startVerbRecorder(extender.url);
    stops.push(() => recorder.stop());
    const schedulers: KubeSchedulerProcess[] = [];
    stops.push(() => Promise.all(schedulers.map((ks) => ks.stop())).then(() => {}));
    // A pod that never binds fails a test with what kube-scheduler logged of it and what the extender answered: on
    // a shared CI machine that is all there is to go on.
    const whyNotBound = (name: string) => {
      const logged = schedulers.flatMap((ks) =>
        ks
          .log()
          .split('\n')
          .filter((line) => line.includes(`"default/${name}"`)),
      );
      // A kube-scheduler that died (a panic, a fatal error) schedules nothing more: its last words.
      const exited = schedulers.flatMap((ks) => {
        const { exitCode, signalCode } = ks.child;
        if (exitCode === null && signalCode === null) return [];
        return [`a kube-scheduler exited (${exitCode ?? signalCode}):`, ...ks.log().trimEnd().split('\n').slice(-10)];
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
        plane.logs(5),
      ].join('\n');
    };
    const podOf = (name: string) =>
      api.get<KubeObject & { spec: { nodeName?: string }; status?: { conditions?: PodCondition[] } }>(
        'Pod',
        name,
        'default',
      );
    const cluster: SchedulerCluster = {
      plane,
      api,
      proxy,
      get extender() {
        return extender;
      },
      recorder,
      provisioner,
      kubeconfig,
      extenderUser: `system:serviceaccount:${account.namespace}:${account.name}`,
      dir,
      add,
      async writes() {
        return (await plane.audit()).flatMap((e) => {
          const method = WRITE_METHODS[e.verb];
          if (!method) return [];
          const path = e.requestURI.replace(/\?.*$/, '');
          return [{ user: e.user.username, method, path, status: e.responseStatus?.code ?? 0 }];
        });
      },
      async scheduler(binary, schedulerName, registration, extraArgs = [], config = {}) {
        const ks = await startKubeScheduler(
          binary,
          dir,
          {
            ...config,
            kubeconfig: plane.schedulerKubeconfig,
            schedulerName,
            extender: registration ? { ...registration, url: recorder.url } : undefined,
          },
          extraArgs,
        );
        schedulers.push(ks);
        return ks;
      },
      async restartExtender(o = {}) {
        await cluster.stopExtender();
        await cluster.startExtender(o);
      },
      async stopExtender() {
        await extender.stop();
      },
      async startExtender({ ready = true, extenderArgs: args } = {}) {
        if (args) extenderArgs = args;
        extender = await startExtender(kubeconfig, serveArgs());
        recorder.target = extender.url;
        if (ready) await extenderReady(extender);
      },
      async boundNode(name, timeoutMs = 60_000) {
        try {
          return await waitFor(`pod ${name} bound`, async () => (await podOf(name))?.spec.nodeName, timeoutMs);
        } catch (err) {
          throw new Error(`${(err as Error).message}\n${whyNotBound(name)}`);
        }
      },
      whyNotBound,
      unschedulable(name, text) {
        return waitFor(`pod ${name} unschedulable${text ? ` with "${text}"` : ''}`, async () => {
          const scheduled = (await podOf(name))?.status?.conditions?.find((c) => c.type === 'PodScheduled');
          if (scheduled?.status !== 'False') return undefined;
          return !text || scheduled.message?.includes(text) ? scheduled : undefined;
        });
      },
      failedScheduling(name) {
        return waitFor(`a FailedScheduling event of pod ${name}`, async () => {
          const events = (await api.list('events.k8s.io/v1/Event', 'default')) as unknown as SchedulingEvent[];
          const mine = events.filter((e) => e.reason === 'FailedScheduling' && e.regarding?.name === name);
          return mine.length > 0 ? mine : undefined;
        });
      },
      async assumedPods() {
        const res = await fetch(`${extender.url}/api/v1/pods/assumed`);
        if (!res.ok) throw new Error(`GET /api/v1/pods/assumed: ${res.status} ${await res.text()}`);
        return ((await res.json()) as { items: { namespace: string; name: string }[] }).items;
      },
      async stop() {
        for (const stop of stops.reverse()) await stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
    return cluster;
  } catch (err) {
    for (const stop of stops.reverse()) await stop();
    throw err;
  }
}
