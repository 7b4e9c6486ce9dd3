// Binds through one and through two extender processes on a real control plane (startSchedulerCluster:
// kube-apiserver, etcd, kube-controller-manager's PV controller at its default --kube-api-qps 20; the replicas as the
// chart's ServiceAccount through the test proxy), in the same run: pods with one WaitForFirstConsumer local claim each,
// more pods than local PVs, `--in-flight` pods in flight, each call to a random replica, and one bind in five retried
// on the other replica while the first is in flight (decided on it). Prints binds/s and the bind Error rate per setup,
// what each bound pod cost in API calls (the claim hold is one PATCH, the read-back before the Binding two GETs), and
// the stranded / double-booked counts once the PV controller settled (always 0), and with --out writes them into that
// file's replicas section (bench/RESULTS.md).
// Run: ./node_modules/.bin/node bench/live/replicas.ts [--nodes 40] [--pvs-per-node 5] [--pods 400] [--in-flight 32] [--out FILE]
import { parseArgs } from 'node:util';
import { ANN_SELECTED_VOLUME, HOLD_SECONDS } from '../../src/volumes/claim-hold.ts';
import { waitFor } from '../../test/cluster/kube/helpers.ts';
import type { KubeObject } from '../../test/components/kube-api.ts';
import { type ExtenderProcess, startExtender } from '../../test/e2e/extender-process.ts';
import {
  claim,
  clusterObjects,
  LOCAL_CLASS,
  localPV,
  pendingPod,
  startSchedulerCluster,
} from '../../test/e2e/scheduler-cluster.ts';
import { writeResultsSection } from '../results-section.ts';

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '40' },
    'pvs-per-node': { type: 'string', default: '5' },
    pods: { type: 'string', default: '400' },
    'in-flight': { type: 'string', default: '32' },
    out: { type: 'string' },
  },
});
const NODES = Number(args.nodes);
const PVS_PER_NODE = Number(args['pvs-per-node']);
const PODS = Number(args.pods);
const IN_FLIGHT = Number(args['in-flight']);

/** No kube-scheduler serves it: only the bench's calls decide about these pods. */
const SCHEDULER = 'replicas-bench';
/** Longer than the PV controller's backlog of IN_FLIGHT claims at its default client limit. */
const BIND_TIMEOUT_SECONDS = 120;

type Claim = KubeObject & {
  metadata: { uid: string; annotations?: Record<string, string> };
  spec: { volumeName?: string };
  status?: { phase?: string };
};
type Volume = KubeObject & { spec: { claimRef?: { uid?: string } } };
type Pod = KubeObject & { metadata: { uid: string }; spec: { nodeName?: string } };

interface Result {
  replicas: number;
  seconds: number;
  binds: number;
  errors: number;
  bound: number;
  stranded: number;
  doubleNamed: number;
  perBound: { pvcPatches: number; pvPatches: number; gets: number; bindings: number };
  bindMs: number;
  /** Seconds from the first bind's start until the PV controller had bound every claim a PV names. */
  settledSeconds: number;
  /** With failover: ms from kill -9 of one replica to the survivor's next successful bind. */
  failoverMs?: number;
  /** With failover: claims the killed replica held without writing their PV (blocked up to HOLD_SECONDS). */
  orphanedHolds?: number;
}

async function post<T>(instance: ExtenderProcess, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${instance.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await res.json()) as T;
}

async function run(replicas: number, failover = false): Promise<Result & { patchMs: number }> {
  const nodeNames = Array.from({ length: NODES }, (_, i) => `node-${i}`);
  const objects: KubeObject[] = [...clusterObjects(NODES)];
  for (const name of nodeNames) for (let i = 0; i < PVS_PER_NODE; i++) objects.push(localPV(`${name}-pv-${i}`, name));
  for (let i = 0; i < PODS; i++)
    objects.push(claim(`data-${i}`, LOCAL_CLASS), pendingPod(`web-${i}`, SCHEDULER, { claims: [`data-${i}`] }));
  const cluster = await startSchedulerCluster(objects, { bindTimeoutSeconds: BIND_TIMEOUT_SECONDS });
  // The replicas are the bench's own (one is killed in the failover run): the fixture's stands down.
  await cluster.stopExtender();
  const args = ['--bind-timeout-seconds', String(BIND_TIMEOUT_SECONDS)];
  const instances = await Promise.all(Array.from({ length: replicas }, () => startExtender(cluster.kubeconfig, args)));
  for (const i of instances) await waitFor('ready', async () => (await fetch(`${i.url}/readyz`)).ok, 120_000);

  const random = (n: number) => Math.floor(Math.random() * n);
  const pods = new Map((await cluster.api.list<Pod>('Pod', 'default')).map((p) => [p.metadata.name, p] as const));
  const nodeNameOf = async (name: string) => (await cluster.api.get<Pod>('Pod', name, 'default'))?.spec.nodeName;
  let binds = 0;
  let errors = 0;
  let bindMs = 0;
  let killedAt: number | undefined;
  let failoverMs: number | undefined;
  const live = () => (killedAt === undefined ? instances : instances.slice(1));
  const bind = async (instance: ExtenderProcess, name: string, nodeName: string) => {
    const started = performance.now();
    const { Error: error } = await post<{ Error: string }>(instance, '/scheduler/bind', {
      PodName: name,
      PodNamespace: 'default',
      PodUID: pods.get(name)!.metadata.uid,
      Node: nodeName,
    });
    bindMs += performance.now() - started;
    binds++;
    if (error) errors++;
    else if (killedAt !== undefined && failoverMs === undefined && started > killedAt) {
      failoverMs = performance.now() - killedAt;
    }
    if (failover && killedAt === undefined && binds >= PODS / 4) {
      // The node under replica 0 is lost: kill -9, in the middle of binds; the Service then routes to the other.
      killedAt = performance.now();
      instances[0].child.kill('SIGKILL');
    }
  };
  const filter = async (instance: ExtenderProcess, name: string) =>
    (
      await post<{ NodeNames: string[] | null }>(instance, '/scheduler/filter', {
        Pod: pods.get(name),
        Nodes: null,
        NodeNames: nodeNames,
      })
    ).NodeNames ?? [];
  const queue = Array.from({ length: PODS }, (_, i) => `web-${i}`);
  // The replicas' API calls, as the proxy in front of the API server saw them.
  const requestsBefore = cluster.proxy.requests.length;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      for (let name = queue.shift(); name; name = queue.shift()) {
        for (let attempt = 0; attempt < 3 && !(await nodeNameOf(name)); attempt++) {
          const serving = live();
          const first = random(serving.length);
          const retried = Math.random() < 0.2;
          const other = serving[(first + 1) % serving.length];
          try {
            const [fits, refits] = await Promise.all([
              filter(serving[first], name),
              retried ? filter(other, name) : Promise.resolve([]),
            ]);
            if (fits.length === 0) break;
            const calls = [bind(serving[first], name, fits[random(fits.length)])];
            if (refits.length > 0) calls.push(bind(other, name, refits[random(refits.length)]));
            await Promise.all(calls);
          } catch {
            // A call to the killed replica: kube-scheduler sees a connection error and retries the pod.
            binds++;
            errors++;
          }
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  // What the fake's settle() forced: the real PV controller binds every claim a PV names to that PV.
  const settledAt = await waitFor(
    'the PV controller settles',
    async () => {
      const claims = await cluster.api.list<Claim>('PersistentVolumeClaim', 'default');
      const byUid = new Map(claims.map((c) => [c.metadata.uid, c]));
      for (const v of await cluster.api.list<Volume>('PersistentVolume')) {
        const uid = v.spec.claimRef?.uid;
        if (uid && byUid.get(uid)?.spec.volumeName !== v.metadata.name) return undefined;
      }
      return performance.now();
    },
    600_000,
  );

  const bound = (await cluster.api.list<Pod>('Pod', 'default')).filter((p) => p.spec.nodeName);
  const claims = new Map(
    (await cluster.api.list<Claim>('PersistentVolumeClaim', 'default')).map((c) => [c.metadata.name, c] as const),
  );
  let stranded = 0;
  for (const p of bound) {
    // Local PVs are named after their node.
    const volumeName = claims.get(`data-${p.metadata.name.slice(4)}`)?.spec.volumeName ?? '';
    if (!volumeName.startsWith(`${p.spec.nodeName}-pv-`)) stranded++;
  }
  const named = new Map<string, number>();
  for (const v of await cluster.api.list<Volume>('PersistentVolume')) {
    const uid = v.spec.claimRef?.uid;
    if (uid) named.set(uid, (named.get(uid) ?? 0) + 1);
  }
  const requests = cluster.proxy.requests.slice(requestsBefore);
  const writes = requests.filter((r) => r.method !== 'GET' && r.status >= 200 && r.status < 300);
  const gets = requests.filter((r) => r.method === 'GET' && !r.watch && /persistentvolume/.test(r.path)).length;
  const per = (n: number) => n / Math.max(bound.length, 1);
  const result: Result = {
    replicas,
    seconds,
    binds,
    errors,
    bound: bound.length,
    stranded,
    doubleNamed: [...named.values()].filter((n) => n > 1).length,
    perBound: {
      pvcPatches: per(writes.filter((w) => w.path.includes('/persistentvolumeclaims/')).length),
      pvPatches: per(writes.filter((w) => w.path.startsWith('/api/v1/persistentvolumes/')).length),
      gets: per(gets),
      bindings: per(writes.filter((w) => w.path.endsWith('/binding')).length),
    },
    bindMs: bindMs / Math.max(binds, 1),
    settledSeconds: (settledAt - started) / 1000,
  };
  if (failover) {
    result.failoverMs = failoverMs;
    result.orphanedHolds = [...claims.values()].filter(
      (c) => !c.spec.volumeName && c.metadata.annotations?.[ANN_SELECTED_VOLUME],
    ).length;
  }
  const patchMs = await patchRoundTripMs(cluster.api);
  await Promise.all(live().map((i) => i.stop()));
  await cluster.stop();
  return { ...result, patchMs };
}

/** The mean of one PVC PATCH round trip to the API server: what the claim hold adds to a bind, in this run. */
async function patchRoundTripMs(api: Awaited<ReturnType<typeof startSchedulerCluster>>['api']): Promise<number> {
  const probe = await api.create(claim('probe', LOCAL_CLASS));
  const rounds = 200;
  const started = performance.now();
  for (let i = 0; i < rounds; i++) await api.patch(probe, { metadata: { annotations: { probe: String(i) } } });
  return (performance.now() - started) / rounds;
}

const results = [await run(1), await run(2)];
const failed = await run(2, true);
const patchMs = results[0].patchMs;
const row = (r: Result) =>
  `| ${r.replicas} | ${Math.round(r.binds / r.seconds)} | ${((100 * r.errors) / r.binds).toFixed(0)} % (${r.errors} of ${r.binds}) | ${r.bound} | ${r.bindMs.toFixed(1)} | ${r.perBound.pvcPatches.toFixed(2)} / ${r.perBound.pvPatches.toFixed(2)} / ${r.perBound.gets.toFixed(2)} / ${r.perBound.bindings.toFixed(2)} | ${r.stranded} | ${r.doubleNamed} | ${r.settledSeconds.toFixed(1)} |`;
const md = `<!-- replicas: written by bench/live/replicas.ts -->
## Replicas (\`bench/live/replicas.ts\`)

${PODS} pods with one WaitForFirstConsumer local claim each, ${NODES} nodes × ${PVS_PER_NODE} local PVs, ${IN_FLIGHT} pods in flight, each call to a random replica, one bind in five retried on the other replica while the first is in flight; a real control plane (kube-apiserver, etcd, kube-controller-manager's PV controller at its default client limit, \`--kube-api-qps\` 20), a fresh one per row, in the same run. A bind waits for the PV controller to bind its claim: that wait, not the extender, sets the pace.

| replicas | binds/s | bind Error rate | pods bound | mean bind ms | per bound pod: claim PATCHes / PV PATCHes / volume GETs / Bindings | stranded pods | claims named by two PVs | s until the PV controller settled |
|---:|---:|---:|---:|---:|---|---:|---:|---:|
${results.map(row).join('\n')}

The claim hold is one PATCH per static claim: one PATCH round trip to this kube-apiserver (the bench's own, administrator) took ${patchMs.toFixed(2)} ms in the same run (of a ${results[0].bindMs.toFixed(1)} ms mean bind with one replica). Errors are binds that lost a PV or a claim to another bind (more pods than PVs) and retried binds refused while the first was in flight; kube-scheduler retries those pods.
Failover, same run: two replicas, one killed with SIGKILL after ${PODS / 4} binds (its node lost), the rest routed to the survivor: its next successful bind came ${failed.failoverMs?.toFixed(0)} ms after the kill; ${failed.orphanedHolds} claim(s) held by the killed replica without their PV written (each blocks only its own pod, for at most the hold's ${HOLD_SECONDS} s); ${failed.stranded} stranded pods, ${failed.doubleNamed} claims named by two PVs, ${failed.bound} pods bound.
<!-- /replicas -->
`;
console.log(md);
if (args.out) await writeResultsSection(args.out, 'replicas', md);
process.exit(0);
