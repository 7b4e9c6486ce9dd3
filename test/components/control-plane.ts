// A real control plane for the end-to-end suites and benches: etcd on loopback with a scratch data dir,
// kube-apiserver (TLS from a test CA, static tokens, RBAC), and kube-controller-manager running the volume controllers
// a delegated bind waits for, each as its own process group, stopped with it (and killed if the test process dies).
//
// What a cluster has that no process here can be: kubelets. So nodes are API objects the tests create Ready, the
// admission plugins that would wait for kubelets (ServiceAccount, TaintNodesByCondition) are off, and a pod deleted
// after it was bound is finished by `finishTerminatingPods` (a kubelet confirms the deletion of a pod it ran).
// With `workloads`, kube-controller-manager also runs the controllers that make and evict pods (StatefulSet,
// Deployment, Job, the ephemeral-volume controller, node life cycle with taint-based eviction, ...) and KWOK plays the
// kubelets of the nodes that carry its label (kwokNode): their leases, pods that go Running, deletions confirmed.
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { TestCa } from '../helpers/certs.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import type { KubeComponents } from './components.ts';
import { KubeApi, type KubeObject } from './kube-api.ts';

export interface ControlPlaneOptions {
  /** kube-controller-manager's --kube-api-qps and --kube-api-burst; unset, its defaults (20 and 30). */
  controllerManagerQps?: number;
  controllerManagerBurst?: number;
  /**
   * kube-controller-manager's --pvclaimbinder-sync-period in seconds; unset, its default (15). Each period the PV
   * controller syncs every PV and claim again: 1.3-3.9 CPU-seconds at 5,000 nodes (50,000 PVs).
   */
  pvResyncSeconds?: number;
  /**
   * kube-apiserver's /debug/pprof (off by default here): a bench forces its Go GC through `heap?gc=1` so that a
   * collection of its multi-GiB heap starts no burst it times.
   */
  profiling?: boolean;
  /** Audit the administrator's writes too (the tests' own set-up). Default true; a bench loading 150,000 pods says no. */
  auditAdmin?: boolean;
  /** The workload controllers and node life cycle in kube-controller-manager, and KWOK for simulated nodes. */
  workloads?: boolean;
}

export interface ControlPlane {
  /** https://127.0.0.1:PORT */
  url: string;
  /** The CA that signed kube-apiserver's serving certificate (PEM). */
  ca: string;
  dir: string;
  /** A cluster administrator (system:masters), for the tests' own reads and writes. */
  admin: KubeApi;
  adminKubeconfig: string;
  /** User system:kube-scheduler, which upstream's bootstrap roles bind as they do for a real kube-scheduler. */
  schedulerKubeconfig: string;
  /**
   * A kubeconfig with a token for the ServiceAccount (TokenRequest API): what a pod running as it would hold; for the
   * API server, or for `server` (a proxy in front of it, plain HTTP).
   */
  serviceAccountKubeconfig(namespace: string, name: string, server?: string): Promise<string>;
  /**
   * Freezes kube-controller-manager (SIGSTOP) or lets it go on (SIGCONT): a PV controller that takes as long as a
   * test needs, then catches up on everything that changed meanwhile.
   */
  pauseControllerManager(paused: boolean): void;
  /**
   * With `workloads`: how long a node's kubelet may be silent before node life cycle marks it Unknown and taints it
   * unreachable, and how long a pod tolerates that taint (the API server's default toleration) before it is evicted.
   */
  nodeLifecycle?: { monitorGracePeriodSeconds: number; unreachableTolerationSeconds: number };
  /** Each component's process id, by name (etcd, kube-apiserver, kube-controller-manager): a bench reads their CPU. */
  pids: Record<string, number>;
  /** Milliseconds from start until each component was ready. */
  readyInMs: { etcd: number; kubeApiserver: number; kubeControllerManager: number; total: number };
  /**
   * Every request the API server completed, from its audit log, but the administrator's reads and the API server's
   * own calls: who wrote what (and, for the extender, every read too), as the API server saw it.
   */
  audit(): Promise<AuditEvent[]>;
  /** The last lines each component logged, for a failing test's message. */
  logs(lines?: number): string;
  stop(): Promise<void>;
}

/** One audit event (a completed request, or a watch that started), as the API server's log backend writes it. */
export interface AuditEvent {
  verb: string;
  requestURI: string;
  /** When the API server answered (RFC 3339, microseconds). */
  stageTimestamp: string;
  user: { username: string; groups?: string[] };
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; name?: string; namespace?: string; apiGroup?: string };
  responseStatus?: { code: number };
}

/** Metadata of every request but the tests' own reads (they poll) and the API server's loopback calls. */
const auditPolicy = (admin: boolean) =>
  JSON.stringify({
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    rules: [
      { level: 'None', userGroups: ['system:masters'], ...(admin ? { verbs: ['get', 'list', 'watch'] } : {}) },
      { level: 'None', users: ['system:apiserver'] },
      { level: 'None', nonResourceURLs: ['/*'] },
      { level: 'Metadata' },
    ],
  });

interface ComponentProcess {
  name: string;
  child: ChildProcess;
  tail(lines: number): string;
  exited: Promise<unknown>;
}

// Components outlive nothing: not the test process's normal exit, nor a runner that ends it with a signal.
const running = new Set<ChildProcess>();
/** Children in the test process's own group (kube-schedulers, extenders): dieWithTestProcess. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) killGroup(child, 'SIGKILL');
  for (const child of children) child.kill('SIGKILL');
});

/**
 * A child that is no component here (a kube-scheduler, the extender) is killed when the test process exits as well:
 * a bench that threw once left six kube-schedulers and three extenders holding 10 GiB after it.
 */
export function dieWithTestProcess(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => process.exit(128 + (signal === 'SIGTERM' ? 15 : 2)));
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {}
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Runs a component in its own process group, its output in `dir/NAME.log` and the last 64 KiB kept in memory. */
function startComponent(name: string, path: string, args: string[], dir: string): ComponentProcess {
  const child = spawn(path, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  const file = createWriteStream(join(dir, `${name}.log`));
  let recent = '';
  const keep = (chunk: Buffer) => {
    file.write(chunk);
    recent = (recent + chunk.toString()).slice(-65_536);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = once(child, 'exit').then(() => {
    running.delete(child);
    file.end();
  });
  return { name, child, exited, tail: (lines) => recent.trimEnd().split('\n').slice(-lines).join('\n') };
}

async function stopComponent(c: ComponentProcess): Promise<void> {
  if (c.child.exitCode !== null || c.child.signalCode !== null) return;
  killGroup(c.child, 'SIGTERM');
  const timer = setTimeout(() => killGroup(c.child, 'SIGKILL'), 10_000);
  await c.exited;
  clearTimeout(timer);
}

/** Resolves once `ready()` holds, checked every 100 ms; rejects with the component's last words if it exits first. */
async function readyOrExit(c: ComponentProcess, what: string, ready: () => Promise<boolean>, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void c.exited.then(() => {
    exited = true;
  });
  for (;;) {
    if (exited)
      throw new Error(`${c.name} exited (${c.child.exitCode ?? c.child.signalCode}) before ${what}:\n${c.tail(30)}`);
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${c.name}: not ${what} within ${timeoutMs} ms:\n${c.tail(30)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function httpsOk(url: string, ca: string, token: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(url, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

function kubeconfig(server: string, ca: string, token: string): string {
  // client-node sends a token over plain HTTP (a proxy on loopback) only with TLS verification declared off.
  const trust = server.startsWith('https:')
    ? { 'certificate-authority-data': Buffer.from(ca).toString('base64') }
    : { 'insecure-skip-tls-verify': true };
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server, ...trust } }],
    users: [{ name: 'test', user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: 'test', namespace: 'default' } }],
    'current-context': 'test',
  });
}

const TOKENS = {
  admin: 'admin-token',
  scheduler: 'kube-scheduler-token',
  controllerManager: 'kube-controller-manager-token',
};

/** The volume controllers a delegated bind waits for: the PV binder, and the protection controllers that let deletes finish. */
const CONTROLLERS = [
  'persistentvolume-binder-controller',
  'persistentvolumeclaim-protection-controller',
  'persistentvolume-protection-controller',
];

/** What makes, owns and evicts pods in a cluster: the workloads' controllers and the node life cycle. */
const WORKLOAD_CONTROLLERS = [
  'statefulset-controller',
  'replicaset-controller',
  'deployment-controller',
  'job-controller',
  'ephemeral-volume-controller',
  'garbage-collector-controller',
  'disruption-controller',
  'node-lifecycle-controller',
  'taint-eviction-controller',
  'pod-garbage-collector-controller',
];

/**
 * The label KWOK manages a node by (kwokNode sets it). A label, not an annotation: its watch is then the API server's
 * label selector, which tells KWOK of a node that lost the label, and KWOK stops renewing its lease.
 */
export const KWOK_NODE_LABEL = 'kwok.x-k8s.io/node';

/**
 * Short enough for a test to watch a node get lost, long enough that a loaded machine never loses one by accident:
 * KWOK renews a node's lease every quarter of its duration (2 s).
 */
const NODE_LIFECYCLE = { leaseDurationSeconds: 8, monitorGracePeriodSeconds: 20, unreachableTolerationSeconds: 5 };

export async function startControlPlane(
  components: KubeComponents,
  options: ControlPlaneOptions = {},
): Promise<ControlPlane> {
  const started = performance.now();
  const dir = await tempDir('control-plane-');
  await mkdir(join(dir, 'etcd'));
  const processes: ComponentProcess[] = [];
  const stopAll = async () => {
    for (const c of [...processes].reverse()) await stopComponent(c);
  };
  try {
    // etcd
    const [clientPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const etcd = startComponent(
      'etcd',
      components.etcd.path,
      [
        '--name=test',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=test=${peerUrl}`,
        // A scratch cluster: durability buys nothing, and fsyncs on a shared disk cost seconds.
        '--unsafe-no-fsync',
        '--quota-backend-bytes=8589934592',
        '--log-level=warn',
      ],
      dir,
    );
    processes.push(etcd);
    await readyOrExit(etcd, 'healthy', async () => (await fetch(`${etcdUrl}/health`)).ok);
    const etcdReady = performance.now();

    // kube-apiserver
    const ca = new TestCa('control-plane-ca');
    const serving = ca.server('kube-apiserver');
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await Promise.all([
      writeFile(join(dir, 'audit-policy.json'), auditPolicy(options.auditAdmin ?? true)),
      writeFile(join(dir, 'apiserver.crt'), serving.cert),
      writeFile(join(dir, 'apiserver.key'), serving.key),
      writeFile(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' })),
      writeFile(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' })),
      writeFile(
        join(dir, 'tokens.csv'),
        [
          `${TOKENS.admin},admin,admin,system:masters`,
          `${TOKENS.scheduler},system:kube-scheduler,system:kube-scheduler`,
          `${TOKENS.controllerManager},system:kube-controller-manager,system:kube-controller-manager`,
          '',
        ].join('\n'),
      ),
    ]);
    const url = `https://127.0.0.1:${apiPort}`;
    const apiserver = startComponent(
      'kube-apiserver',
      components.kubeApiserver.path,
      [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        `--tls-cert-file=${join(dir, 'apiserver.crt')}`,
        `--tls-private-key-file=${join(dir, 'apiserver.key')}`,
        `--cert-dir=${dir}`,
        `--token-auth-file=${join(dir, 'tokens.csv')}`,
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${join(dir, 'sa.pub')}`,
        `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
        '--service-cluster-ip-range=10.96.0.0/16',
        // No kubelet will mount a ServiceAccount token or lift the not-ready taint of the nodes the tests create.
        '--disable-admission-plugins=ServiceAccount,TaintNodesByCondition',
        // No kubelet serves the endpoints of the `kubernetes` Service either.
        '--endpoint-reconciler-type=none',
        `--profiling=${options.profiling ?? false}`,
        `--audit-policy-file=${join(dir, 'audit-policy.json')}`,
        `--audit-log-path=${join(dir, 'audit.log')}`,
        '--audit-log-format=json',
        // Written before the answer leaves, so a test that got its answer finds the event.
        '--audit-log-mode=blocking',
        ...(options.workloads
          ? [
              `--default-unreachable-toleration-seconds=${NODE_LIFECYCLE.unreachableTolerationSeconds}`,
              `--default-not-ready-toleration-seconds=${NODE_LIFECYCLE.unreachableTolerationSeconds}`,
            ]
          : []),
      ],
      dir,
    );
    processes.push(apiserver);
    await readyOrExit(apiserver, 'ready', () => httpsOk(`${url}/readyz`, ca.pem, TOKENS.admin));
    const apiserverReady = performance.now();

    const write = async (name: string, token: string, server = url) => {
      const file = join(dir, `${name}.kubeconfig`);
      await writeFile(file, kubeconfig(server, ca.pem, token));
      return file;
    };
    const adminKubeconfig = await write('admin', TOKENS.admin);
    const schedulerKubeconfig = await write('kube-scheduler', TOKENS.scheduler);
    const controllerManagerKubeconfig = await write('kube-controller-manager', TOKENS.controllerManager);
    const admin = new KubeApi(adminKubeconfig);

    // kube-controller-manager: each controller under its own ServiceAccount, as clusters run it.
    const controllerManager = startComponent(
      'kube-controller-manager',
      components.kubeControllerManager.path,
      [
        `--kubeconfig=${controllerManagerKubeconfig}`,
        `--controllers=${[...CONTROLLERS, ...(options.workloads ? WORKLOAD_CONTROLLERS : [])].join(',')}`,
        ...(options.workloads
          ? [`--node-monitor-grace-period=${NODE_LIFECYCLE.monitorGracePeriodSeconds}s`, '--node-monitor-period=1s']
          : []),
        '--use-service-account-credentials=true',
        '--leader-elect=false',
        '--secure-port=0',
        ...(options.controllerManagerQps ? [`--kube-api-qps=${options.controllerManagerQps}`] : []),
        ...(options.controllerManagerBurst ? [`--kube-api-burst=${options.controllerManagerBurst}`] : []),
        ...(options.pvResyncSeconds ? [`--pvclaimbinder-sync-period=${options.pvResyncSeconds}s`] : []),
      ],
      dir,
    );
    processes.push(controllerManager);
    // Ready once the PV controller has synced its informers: it binds from then on.
    await readyOrExit(controllerManager, 'running the PV controller', async () =>
      /Starting persistent volume controller[\s\S]*Caches are synced/.test(controllerManager.tail(400)),
    );
    if (options.workloads) {
      // As the administrator: the tests' simulated kubelets are not what they check.
      const kwok = startComponent(
        'kwok',
        components.kwok.path,
        [
          `--kubeconfig=${adminKubeconfig}`,
          `--manage-nodes-with-label-selector=${KWOK_NODE_LABEL}=fake`,
          `--node-lease-duration-seconds=${NODE_LIFECYCLE.leaseDurationSeconds}`,
          '--cidr=10.0.0.1/16',
        ],
        dir,
      );
      processes.push(kwok);
      await readyOrExit(kwok, 'watching nodes', async () => /Watch nodes/.test(kwok.tail(50)));
    }
    const done = performance.now();

    return {
      url,
      ca: ca.pem,
      dir,
      admin,
      adminKubeconfig,
      schedulerKubeconfig,
      pids: Object.fromEntries(processes.map((p) => [p.name, p.child.pid!])),
      pauseControllerManager: (paused) => killGroup(controllerManager.child, paused ? 'SIGSTOP' : 'SIGCONT'),
      ...(options.workloads ? { nodeLifecycle: NODE_LIFECYCLE } : {}),
      async serviceAccountKubeconfig(namespace, name, server) {
        const answer = await admin.client.request<{ status: { token: string } }>(
          'POST',
          `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
          {
            body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 86_400 } },
          },
        );
        return write(`${namespace}.${name}${server ? '.proxied' : ''}`, answer.status.token, server);
      },
      async audit() {
        const text = await readFile(join(dir, 'audit.log'), 'utf8').catch(() => '');
        return (
          text
            .split('\n')
            .filter((line) => line.length > 0)
            .map((line) => JSON.parse(line) as AuditEvent & { stage: string })
            // An open watch has only started; it counts as a request made.
            .filter((e) => e.stage === 'ResponseComplete' || (e.stage === 'ResponseStarted' && e.verb === 'watch'))
        );
      },
      readyInMs: {
        etcd: Math.round(etcdReady - started),
        kubeApiserver: Math.round(apiserverReady - etcdReady),
        kubeControllerManager: Math.round(done - apiserverReady),
        total: Math.round(done - started),
      },
      logs: (lines = 20) => processes.map((c) => `--- ${c.name} (last ${lines} lines)\n${c.tail(lines)}`).join('\n'),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * What a kubelet does for a deleted pod it ran: confirm the deletion (grace period 0) once the API server marked it
 * terminating, of that pod only (its UID: the watch may be late, and a pod recreated under the name is not the one it
 * ran). Without it a preemption victim would hold its node's resources forever. Returns its stop.
 */
export function finishTerminatingPods(api: KubeApi): Promise<() => void> {
  return api.watch<KubeObject & { metadata: { deletionTimestamp?: string } }>('Pod', (type, pod) => {
    if (type !== 'DELETED' && pod.metadata.deletionTimestamp) void api.delete(pod, 0).catch(() => {});
  });
}
