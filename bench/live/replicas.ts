// Binds through one and through two extender processes sharing one fake API server (in this process, with the PV
// controller and provisioner of test/e2e/volume-controllers.ts), in the same run: pods with one WaitForFirstConsumer
// local claim each, more pods than local PVs, `--in-flight` pods in flight, each call to a random replica, and one
// bind in five retried on the other replica while the first is in flight (decided on it). Prints binds/s and the
// bind Error rate per setup, what each bound pod cost in API calls (the claim hold is one PATCH, the read-back before
// the Binding two GETs), and the stranded / double-booked counts once the PV controller settled (always 0), and
// with --out writes them into that file's replicas section (bench/RESULTS.md).
// Run: ./node_modules/.bin/node bench/live/replicas.ts [--nodes 40] [--pvs-per-node 5] [--pods 400] [--in-flight 32] [--out FILE]
import { parseArgs } from 'node:util';
import { ANN_SELECTED_VOLUME, HOLD_SECONDS } from '../../src/volumes/claim-hold.ts';
import { node, pod, pv, pvc, storageClass, waitFor } from '../../test/cluster/kube/helpers.ts';
import { type ExtenderProcess, startExtender } from '../../test/e2e/extender-process.ts';
import { FakeApiServer, writeKubeconfig } from '../../test/e2e/fake-apiserver.ts';
import { annotationsOf, FakeVolumeControllers, specOf } from '../../test/e2e/racing-volume-controllers.ts';
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

async function run(replicas: number, failover = false): Promise<Result> {
  const server = new FakeApiServer({ bookmarkIntervalMs: 1000 });
  await server.start();
  const nodeNames = Array.from({ length: NODES }, (_, i) => `node-${i}`);
  for (const name of nodeNames) {
    server.add(node(name, { 'kubernetes.io/hostname': name }));
    for (let i = 0; i < PVS_PER_NODE; i++) server.add(pv(`${name}-pv-${i}`, { node: name }));
  }
  server.add(storageClass('local'));
  for (let i = 0; i < PODS; i++) server.add(pvc(`data-${i}`), pod(`web-${i}`, { claims: [`data-${i}`] }));
  const controllers = new FakeVolumeControllers(server);
  const kubeconfig = await writeKubeconfig(server.url);
  const instances = await Promise.all(Array.from({ length: replicas }, () => startExtender(kubeconfig)));
  for (const i of instances) await waitFor('ready', async () => (await fetch(`${i.url}/readyz`)).ok, 120_000);

  const random = (n: number) => Math.floor(Math.random() * n);
  const podOf = (name: string) => server.get('Pod', name, 'default')!;
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
      PodUID: podOf(name).metadata.uid,
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
        Pod: podOf(name),
        Nodes: null,
        NodeNames: nodeNames,
      })
    ).NodeNames ?? [];
  const queue = Array.from({ length: PODS }, (_, i) => `web-${i}`);
  const writesBefore = server.writes.length;
  const requestsBefore = server.requests.length;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      for (let name = queue.shift(); name; name = queue.shift()) {
        for (let attempt = 0; attempt < 3 && !(podOf(name).spec as { nodeName?: string }).nodeName; attempt++) {
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
  controllers.settle();

  const pods = server.list('Pod');
  const bound = pods.filter((p) => (p.spec as { nodeName?: string }).nodeName);
  let stranded = 0;
  for (const p of bound) {
    const claim = server.get('PersistentVolumeClaim', `data-${p.metadata.name.slice(4)}`, 'default')!;
    // Local PVs are named after their node.
    const volumeName = specOf(claim).volumeName ?? '';
    if (!volumeName.startsWith(`${(p.spec as { nodeName: string }).nodeName}-pv-`)) stranded++;
  }
  const named = new Map<string, number>();
  for (const v of server.list('PersistentVolume')) {
    const uid = specOf(v).claimRef?.uid;
    if (uid) named.set(uid, (named.get(uid) ?? 0) + 1);
  }
  const writes = server.writes.slice(writesBefore).filter((w) => w.status < 300);
  const gets = server.requests
    .slice(requestsBefore)
    .filter((r) => r.method === 'GET' && !r.watch && /persistentvolume/.test(r.path)).length;
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
  };
  if (failover) {
    result.failoverMs = failoverMs;
    result.orphanedHolds = server
      .list('PersistentVolumeClaim')
      .filter((c) => !specOf(c).volumeName && annotationsOf(c)[ANN_SELECTED_VOLUME]).length;
  }
  await Promise.all(live().map((i) => i.stop()));
  await server.stop();
  return result;
}

/** The mean of one PVC PATCH round trip to the fake API server: what the claim hold adds to a bind, in this run. */
async function patchRoundTripMs(): Promise<number> {
  const server = new FakeApiServer();
  await server.start();
  server.add(pvc('probe'));
  const rounds = 200;
  const started = performance.now();
  for (let i = 0; i < rounds; i++) {
    await fetch(`${server.url}/api/v1/namespaces/default/persistentvolumeclaims/probe`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ metadata: { annotations: { probe: String(i) } } }),
    });
  }
  const ms = (performance.now() - started) / rounds;
  await server.stop();
  return ms;
}

const results = [await run(1), await run(2)];
const failed = await run(2, true);
const patchMs = await patchRoundTripMs();
const row = (r: Result) =>
  `| ${r.replicas} | ${Math.round(r.binds / r.seconds)} | ${((100 * r.errors) / r.binds).toFixed(0)} % (${r.errors} of ${r.binds}) | ${r.bound} | ${r.bindMs.toFixed(1)} | ${r.perBound.pvcPatches.toFixed(2)} / ${r.perBound.pvPatches.toFixed(2)} / ${r.perBound.gets.toFixed(2)} / ${r.perBound.bindings.toFixed(2)} | ${r.stranded} | ${r.doubleNamed} |`;
const md = `<!-- replicas: written by bench/live/replicas.ts -->
## Replicas (\`bench/live/replicas.ts\`)

${PODS} pods with one WaitForFirstConsumer local claim each, ${NODES} nodes × ${PVS_PER_NODE} local PVs, ${IN_FLIGHT} pods in flight, each call to a random replica, one bind in five retried on the other replica while the first is in flight; one fake API server with the PV controller and provisioner fakes, the same run for both rows.

| replicas | binds/s | bind Error rate | pods bound | mean bind ms | per bound pod: claim PATCHes / PV PATCHes / volume GETs / Bindings | stranded pods | claims named by two PVs |
|---:|---:|---:|---:|---:|---|---:|---:|
${results.map(row).join('\n')}

The claim hold is one PATCH per static claim: one PATCH round trip to this fake API server took ${patchMs.toFixed(2)} ms in the same run (of a ${results[0].bindMs.toFixed(1)} ms mean bind with one replica). Errors are binds that lost a PV or a claim to another bind (more pods than PVs) and retried binds refused while the first was in flight; kube-scheduler retries those pods.
Failover, same run: two replicas, one killed with SIGKILL after ${PODS / 4} binds (its node lost), the rest routed to the survivor: its next successful bind came ${failed.failoverMs?.toFixed(0)} ms after the kill; ${failed.orphanedHolds} claim(s) held by the killed replica without their PV written (each blocks only its own pod, for at most the hold's ${HOLD_SECONDS} s); ${failed.stranded} stranded pods, ${failed.doubleNamed} claims named by two PVs, ${failed.bound} pods bound.
<!-- /replicas -->
`;
console.log(md);
if (args.out) await writeResultsSection(args.out, 'replicas', md);
process.exit(0);
