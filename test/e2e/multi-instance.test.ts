// Several extender replicas against one API server, as a rollout, `replicaCount: 2` or a leader handover make them:
// two real CLI processes on a real control plane (startSchedulerCluster: kube-apiserver, etcd, kube-controller-manager's
// PV controller, the stand-in CSI provisioner; both replicas as the chart's ServiceAccount through the fault-injecting
// proxy). The test plays kube-scheduler: its calls go to either replica (at random, or a pod's filter, bind and retried
// bind each on another one), for static local claims and dynamically provisioned ones, and a stale leader whose bind
// is still in flight while the other replica binds the same pod. A writer of the previous release (PV claimRefs
// without the claim hold) races some binds, as a rolling update from it would.
//
// The PV controller is the real one; the races it takes part in are provoked by holding it back: a test that needs a
// slow PV controller freezes kube-controller-manager (SIGSTOP, plane.pauseControllerManager) and lets it go on later,
// when it catches up on everything at once. The stale leader's bind waits that way with its writes done; the
// previous-release writer's PV is written while the PV controller is frozen, so it finds both PVs naming the claim, as
// it would if it were slower than both writers, and picks one (its choice among pre-bound PVs is its own: the fake's
// took the latest written, so there the old writer always won; here either may, and the rules hold both ways).
//
// Last, real kube-schedulers (each version found, full delegation) bind pods through both replicas behind a
// round-robin stand-in for the chart's Service, under the same checks.
//
// Whatever the interleaving: no pod is bound to a node its volumes do not fit, no claim is ever named by two PVs that
// replicas wrote (checked on every PV event of a watch, so at each resourceVersion), none is named by two PVs once
// the PV controller settles, every bind answer is true, and every replica's assumptions drain.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import { kubeComponents } from '../components/components.ts';
import type { KubeObject } from '../components/kube-api.ts';
import * as build from '../helpers/objects.ts';
import { assertExitedCleanly, type ExtenderProcess, startExtender } from './extender-process.ts';
import {
  CSI_CLASS,
  claim,
  clusterObjects,
  LOCAL_CLASS,
  localPV,
  pendingPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

const NODES = 4;
const PVS_PER_NODE = 3;
const STATIC_PODS = 16; // more than the 12 local PVs: some binds must lose
const DYNAMIC_PODS = 6;
const LEGACY_RACED = 4; // static pods whose claim a previous-release writer also prebinds
const ATTEMPTS = 6;
const BIND_TIMEOUT_SECONDS = 60;
/** No kube-scheduler serves it: only this test's calls decide about these pods. */
const SCHEDULER = 'multi-instance-test';
const HOLD = 'topology-extender.io/selected-volume';
const BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';

type ClaimRef = { kind?: string; apiVersion?: string; name: string; namespace: string; uid?: string };
type Volume = KubeObject & {
  spec: {
    claimRef?: ClaimRef;
    nodeAffinity?: {
      required?: { nodeSelectorTerms?: { matchExpressions?: { key: string; values: string[] }[] }[] };
    };
  };
};
type Claim = KubeObject & {
  metadata: { uid: string; annotations?: Record<string, string> };
  spec: { volumeName?: string; storageClassName?: string };
  status?: { phase?: string };
};
type Pod = KubeObject & {
  metadata: { uid: string };
  spec: { nodeName?: string; volumes?: { persistentVolumeClaim?: { claimName: string } }[] };
};

const found = await kubeComponents();

/**
 * The chart's Service in front of the replicas, for real kube-schedulers: each call to the next replica in turn, no
 * session affinity, so a pod's filter and bind land on different replicas. Counts the binds each replica answered.
 */
async function startService(replicas: () => ExtenderProcess[]) {
  let next = 0;
  const binds = new Map<string, number>();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const list = replicas();
    const target = list[next++ % list.length];
    if (req.url?.endsWith('/bind')) binds.set(target.url, (binds.get(target.url) ?? 0) + 1);
    try {
      const answer = await fetch(`${target.url}${req.url}`, {
        method: req.method,
        headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
        body: req.method === 'GET' ? undefined : Buffer.concat(chunks),
      });
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await answer.arrayBuffer()));
    } catch {
      res.destroy();
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    binds,
    stop: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** A small seeded generator: a failing interleaving can be replayed with SEED. */
const seed = Number(process.env.SEED ?? Date.now() % 100_000);
let state = seed;
function random(): number {
  state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
  return state / 2 ** 31;
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];

let cluster: SchedulerCluster;
const instances: ExtenderProcess[] = [];
let serviceBinds: Map<string, number>;
const stops: (() => void)[] = [];

// ---- the PV controller held back, and what the replicas wrote, from watches ----

let holds = 0;
/** Holds the real PV controller back (kube-controller-manager frozen) until the returned release; holds nest. */
function holdPvController(): () => void {
  if (holds++ === 0) cluster.plane.pauseControllerManager(true);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--holds === 0) cluster.plane.pauseControllerManager(false);
  };
}

/** Every PV and claim as the watches last delivered them. */
const volumes = new Map<string, Volume>();
const claimsByUid = new Map<string, Claim>();
/** PV name → the claim UID a replica's write pointed it at (the arbiter check: never two live ones per claim). */
const replicaClaimRefs = new Map<string, string>();
/** PV name → the claim UID the previous-release writer pointed it at. */
const legacyClaimRefs = new Map<string, string>();
/** Claims that two PVs replicas wrote named at once: claim name → the PVs. */
const doubleNamed: { claim: string; pvs: string }[] = [];
/** Legacy claims whose hold a replica wrote: the PV controller is held until the writer raced the replica's PV. */
const legacyRaces = new Map<string, { release: () => void; raced: boolean }>();

/** Claim UID → the PV the previous-release writer prebound to it. */
const legacyWrote = new Map<string, string>();

const specText = (v: Volume) => JSON.stringify(v.spec.nodeAffinity ?? {});

/** A replica of the previous release: it prebinds a free PV on another node to the claim, without holding the claim. */
async function legacyPrebind(ref: ClaimRef, notOn: string): Promise<void> {
  const candidates = [...volumes.values()].filter(
    (v) => v.metadata.name.startsWith('local-') && !specText(v).includes(`"${notOn}"`),
  );
  for (const candidate of candidates) {
    const name = candidate.metadata.name;
    if (legacyClaimRefs.has(name)) continue; // another legacy write to it is in flight
    const free = await cluster.api.get<Volume>('PersistentVolume', name);
    // Checked again after the read, and taken before any other await: two legacy writes never share a PV.
    if (!free || free.spec.claimRef || legacyClaimRefs.has(name)) continue;
    legacyClaimRefs.set(name, ref.uid!);
    try {
      // resourceVersion-conditional: a replica that took the PV meanwhile wins (409), as it would against an update.
      await cluster.api.patch(free, {
        metadata: { resourceVersion: free.metadata.resourceVersion, annotations: { [BOUND_BY_CONTROLLER]: 'yes' } },
        spec: { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', ...ref } },
      });
      legacyWrote.set(ref.uid!, name);
      return;
    } catch {
      if (legacyClaimRefs.get(name) === ref.uid) legacyClaimRefs.delete(name);
    }
  }
}

function volumeEvent(type: string, volume: Volume): void {
  const name = volume.metadata.name;
  if (type === 'DELETED') volumes.delete(name);
  else volumes.set(name, volume);
  const ref = type === 'DELETED' ? undefined : volume.spec.claimRef;
  const uid = ref?.uid;
  if (!uid || !ref) {
    replicaClaimRefs.delete(name);
    legacyClaimRefs.delete(name);
    return;
  }
  // Only the replicas and the previous-release writer point local PVs at claims (the PV controller binds only PVs
  // already pre-bound to a WaitForFirstConsumer claim); provisioned PVs are created pre-bound by the provisioner.
  if (!name.startsWith('local-') || legacyClaimRefs.get(name) === uid) return;
  replicaClaimRefs.set(name, uid);
  const live = [...replicaClaimRefs].filter(([n, u]) => u === uid && volumes.get(n)?.spec.claimRef?.uid === uid);
  if (live.length > 1) doubleNamed.push({ claim: ref.name, pvs: live.map(([n]) => n).join(', ') });
  let race = legacyRaces.get(uid);
  if (!race && ref.name.startsWith('legacy-') && !claimsByUid.get(uid)?.spec.volumeName) {
    // The PV's event came before the claim's hold's (two watches): hold the PV controller now.
    race = { release: holdPvController(), raced: false };
    legacyRaces.set(uid, race);
  }
  if (race && !race.raced) {
    race.raced = true;
    const notOn = specText(volume).match(/"(node-\d+)"/)?.[1] ?? '';
    void legacyPrebind(ref, notOn).finally(race.release);
  }
}

function claimEvent(type: string, c: Claim): void {
  if (type === 'DELETED') {
    claimsByUid.delete(c.metadata.uid);
    return;
  }
  claimsByUid.set(c.metadata.uid, c);
  // A replica held a legacy claim and is about to write its PV: the PV controller waits until the old writer raced it
  // (or 3 s, for a bind that stepped back without writing).
  if (c.metadata.name.startsWith('legacy-') && c.metadata.annotations?.[HOLD] && !c.spec.volumeName) {
    if (legacyRaces.has(c.metadata.uid)) return;
    const release = holdPvController();
    legacyRaces.set(c.metadata.uid, { release, raced: false });
    setTimeout(release, 3_000).unref();
  }
}

// ---- kube-scheduler, as far as it calls extenders ----

interface Answer {
  pod: string;
  node: string;
  error: string;
  /** cluster.proxy.requests.length when the answer arrived: a Binding after it cannot make an Error false. */
  requestsAt: number;
}
const answers: Answer[] = [];

/**
 * A 503 is a call refused before it was computed (admission or the verb queue shedding load: a control plane and
 * two replicas on two shared cores are enough). kube-scheduler retries such a pod after a backoff; this one resends the
 * call after its Retry-After, which is the same for the races under test: nothing was decided or written.
 */
async function call<T>(instance: ExtenderProcess, path: string, body?: unknown): Promise<T> {
  for (let refused = 0; ; refused++) {
    const res = await fetch(`${instance.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status === 503 && refused < 20) {
      await res.arrayBuffer();
      await sleep(Number(res.headers.get('retry-after') ?? 0) * 1000 || 100);
      continue;
    }
    if (res.status !== 200) assert.fail(`${path} on ${instance.url}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }
}

const podOf = async (name: string) => (await cluster.api.get<Pod>('Pod', name, 'default'))!;
const nodeNameOf = async (name: string) => (await podOf(name)).spec.nodeName;

async function filter(instance: ExtenderProcess, name: string): Promise<string[]> {
  const nodeNames = Array.from({ length: NODES }, (_, i) => `node-${i}`);
  const body = await call<{ NodeNames: string[] | null; Error: string }>(instance, '/scheduler/filter', {
    Pod: await podOf(name),
    Nodes: null,
    NodeNames: nodeNames,
  });
  assert.equal(body.Error, '');
  return body.NodeNames ?? [];
}

async function bind(instance: ExtenderProcess, name: string, nodeName: string): Promise<string> {
  const p = await podOf(name);
  const { Error: error } = await call<{ Error: string }>(instance, '/scheduler/bind', {
    PodName: name,
    PodNamespace: 'default',
    PodUID: p.metadata.uid,
    Node: nodeName,
  });
  answers.push({ pod: name, node: nodeName, error, requestsAt: cluster.proxy.requests.length });
  return error;
}

/**
 * One pod through filter and bind until bound (or out of attempts: the local PVs run out). Half the time the bind is
 * also retried on another replica, as after a timed-out reply or by a new leader that filtered again, while the first
 * is still in flight.
 */
async function schedule(name: string, routing: 'random' | 'spread'): Promise<void> {
  for (let attempt = 0; attempt < ATTEMPTS && !(await nodeNameOf(name)); attempt++) {
    const first = Math.floor(random() * instances.length);
    const at = (i: number) =>
      instances[routing === 'random' ? Math.floor(random() * instances.length) : (first + i) % instances.length];
    // The retried bind was decided while the first was still in flight: both filters answer before either bind.
    const retried = random() < 0.5;
    // Spread: filter on one replica, bind on the next, the retried bind back on the first (decided on the second).
    const [fits, refits] = await Promise.all([filter(at(0), name), retried ? filter(at(1), name) : []]);
    if (fits.length === 0) return;
    const chosen = pick(fits);
    const binds = [bind(at(1), name, chosen)];
    // The other decision may differ (another replica's view, another leader's scores): mostly, it does.
    const elsewhere = refits.filter((n) => n !== chosen);
    if (refits.length > 0) binds.push(bind(at(2), name, pick(elsewhere.length > 0 ? elsewhere : refits)));
    await Promise.all(binds);
  }
}

async function inBatches(names: string[], routing: 'random' | 'spread', width = 8): Promise<void> {
  const queue = [...names];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let name = queue.shift(); name; name = queue.shift()) await schedule(name, routing);
    }),
  );
}

// ---- the checks ----

/**
 * What the fake's settle() forced, waited for: the real PV controller has bound every claim a PV names to that PV and
 * unbound the PVs it did not take, and every claim handed to the provisioner is bound.
 */
async function settled(): Promise<void> {
  await waitFor(
    'the PV controller settles',
    async () => {
      const claims = await cluster.api.list<Claim>('PersistentVolumeClaim', 'default');
      const byUid = new Map(claims.map((c) => [c.metadata.uid, c]));
      for (const v of await cluster.api.list<Volume>('PersistentVolume')) {
        const uid = v.spec.claimRef?.uid;
        if (!uid) continue;
        const c = byUid.get(uid);
        if (c?.spec.volumeName !== v.metadata.name || c.status?.phase !== 'Bound') return false;
      }
      return claims.every(
        (c) =>
          c.spec.storageClassName !== CSI_CLASS ||
          !c.metadata.annotations?.['volume.kubernetes.io/selected-node'] ||
          c.status?.phase === 'Bound',
      );
    },
    120_000,
  );
}

function nodeFits(volume: Volume, labels: Record<string, string>): boolean {
  const terms = volume.spec.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  return terms.some((t) => (t.matchExpressions ?? []).every((e) => e.values.includes(labels[e.key])));
}

const claimNamesOf = (p: Pod) =>
  (p.spec.volumes ?? []).map((v) => v.persistentVolumeClaim?.claimName).filter((c): c is string => !!c);

/**
 * The rules, for the pods `scope` names (one test's pods) and their claims: a broken rule fails the test that broke
 * it, not every later one.
 */
async function checkCluster(scope: readonly string[]): Promise<void> {
  const names = new Set(scope);
  const pods = (await cluster.api.list<Pod>('Pod', 'default')).filter((p) => names.has(p.metadata.name));
  const claimNames = new Set(pods.flatMap(claimNamesOf));
  const claims = new Map(
    (await cluster.api.list<Claim>('PersistentVolumeClaim', 'default'))
      .filter((c) => claimNames.has(c.metadata.name))
      .map((c) => [c.metadata.name, c]),
  );
  const pvs = await cluster.api.list<Volume>('PersistentVolume');
  const nodes = new Map((await cluster.api.list('Node')).map((n) => [n.metadata.name, n]));
  // Every bound pod's volumes fit its node.
  for (const p of pods) {
    const nodeName = p.spec.nodeName;
    if (!nodeName) continue;
    for (const c of claimNamesOf(p)) {
      const volumeName = claims.get(c)?.spec.volumeName;
      assert.ok(
        volumeName,
        `pod ${p.metadata.name} is bound to ${nodeName} but its claim ${c} is not bound (seed ${seed})`,
      );
      const volume = pvs.find((v) => v.metadata.name === volumeName)!;
      const labels = (nodes.get(nodeName)?.metadata.labels ?? {}) as Record<string, string>;
      assert.ok(
        nodeFits(volume, labels),
        `pod ${p.metadata.name} stranded on ${nodeName}: ${volumeName} is elsewhere (seed ${seed})`,
      );
    }
  }
  // No claim named by two PVs once the PV controller settled; none was ever named by two PVs replicas wrote.
  const claimUids = new Set([...claims.values()].map((c) => c.metadata.uid));
  const byClaim = new Map<string, string[]>();
  for (const v of pvs) {
    const uid = v.spec.claimRef?.uid;
    if (uid && claimUids.has(uid)) byClaim.set(uid, [...(byClaim.get(uid) ?? []), v.metadata.name]);
  }
  assert.deepEqual(
    [...byClaim.values()].filter((names) => names.length > 1),
    [],
    `seed ${seed}`,
  );
  assert.deepEqual(
    doubleNamed.filter((d) => claimNames.has(d.claim)),
    [],
    `claims named by two PVs replicas wrote (seed ${seed})`,
  );
  // Every answer is true: '' means bound there; an Error means no Binding there had landed when it was given. A pod
  // is bound at most once, so a Binding of it that succeeded before the answer went to the node it is bound to now.
  const boundTo = new Map(pods.map((p) => [p.metadata.name, p.spec.nodeName]));
  for (const a of answers.filter((x) => names.has(x.pod))) {
    if (a.error === '') {
      assert.equal(boundTo.get(a.pod), a.node, `bind of ${a.pod} to ${a.node} answered success (seed ${seed})`);
      continue;
    }
    const landed =
      boundTo.get(a.pod) === a.node &&
      cluster.proxy.requests
        .slice(0, a.requestsAt)
        .some(
          (r) =>
            r.method === 'POST' &&
            r.path === `/api/v1/namespaces/default/pods/${a.pod}/binding` &&
            r.status >= 200 &&
            r.status < 300,
        );
    assert.equal(
      landed,
      false,
      `bind of ${a.pod} to ${a.node} answered "${a.error}" though it is bound there (seed ${seed})`,
    );
  }
}

async function assumptionsDrain(): Promise<void> {
  for (const instance of instances) {
    await waitFor(`the assumptions of ${instance.url} drain`, async () => {
      const { items } = await call<{ items: unknown[] }>(instance, '/api/v1/pods/assumed');
      const metrics = await (await fetch(`${instance.url}/metrics`)).text();
      const assumed = [...metrics.matchAll(/^topology_extender_volumes_assumed\{[^}]*\} (\d+)$/gm)];
      return items.length === 0 && assumed.length === 2 && assumed.every((m) => m[1] === '0');
    });
  }
}

if (found.skip) {
  test('several replicas against one API server', { skip: found.skip }, () => {});
} else {
  before(async () => {
    const objects: KubeObject[] = [...clusterObjects(NODES)];
    for (let n = 0; n < NODES; n++)
      for (let i = 0; i < PVS_PER_NODE; i++) objects.push(localPV(`local-${n}-${i}`, `node-${n}`));
    for (let i = 0; i < STATIC_PODS; i++) {
      const claimName = i < LEGACY_RACED ? `legacy-${i}` : `data-${i}`;
      objects.push(claim(claimName, LOCAL_CLASS), pendingPod(`static-${i}`, SCHEDULER, { claims: [claimName] }));
    }
    for (let i = 0; i < DYNAMIC_PODS; i++)
      objects.push(claim(`dyn-${i}`, CSI_CLASS), pendingPod(`dynamic-${i}`, SCHEDULER, { claims: [`dyn-${i}`] }));
    objects.push(claim('stale-data', LOCAL_CLASS), pendingPod('stale', SCHEDULER, { claims: ['stale-data'] }));
    cluster = await startSchedulerCluster(objects, { bindTimeoutSeconds: BIND_TIMEOUT_SECONDS });
    stops.push(await cluster.api.watch<Volume>('PersistentVolume', volumeEvent));
    stops.push(await cluster.api.watch<Claim>('PersistentVolumeClaim', claimEvent));
    // The second replica: the same ServiceAccount, flags and proxy as the fixture's.
    const second = await startExtender(cluster.kubeconfig, ['--bind-timeout-seconds', String(BIND_TIMEOUT_SECONDS)]);
    instances.push(cluster.extender, second);
    for (const instance of instances) {
      await waitFor('ready', async () => (await fetch(`${instance.url}/readyz`)).ok);
    }
    await waitFor('the watches delivered every PV', () => volumes.size >= NODES * PVS_PER_NODE);
    // Real kube-schedulers reach the replicas as through the chart's Service (after the fixture's recorder).
    const service = await startService(() => instances);
    stops.push(service.stop);
    serviceBinds = service.binds;
    cluster.recorder.target = service.url;
  });

  after(async () => {
    cluster?.plane.pauseControllerManager(false);
    for (const stop of stops) stop();
    const codes = await Promise.all(instances.map((i) => i.stop()));
    await cluster?.stop();
    for (const [i, instance] of instances.entries()) assertExitedCleanly(instance, codes[i]);
    const errors = instances.flatMap((i) => i.logs.filter((l) => l.level >= 50));
    assert.deepEqual(errors, [], 'no error logs during the run');
  });

  describe('several replicas against one API server', () => {
    test('stale leader: one replica is still binding a pod while the other binds it elsewhere', async () => {
      const [leader, successor] = instances;
      // Both decided before either wrote: the new leader's kube-scheduler filtered on its own replica.
      const [fits, refits] = await Promise.all([filter(leader, 'stale'), filter(successor, 'stale')]);
      const first = fits[0];
      const second = refits.find((n) => n !== first)!;
      assert.ok(first && second, 'local PVs on at least two nodes');
      // The PV controller is slow: the leader's bind waits with its writes done.
      const release = holdPvController();
      const stale = bind(leader, 'stale', first);
      await waitFor('the leader wrote its PV', () =>
        [...volumes.values()].some((v) => v.spec.claimRef?.name === 'stale-data'),
      );
      const other = await bind(successor, 'stale', second);
      release();
      const answer = await stale;
      assert.equal(answer, '', 'the leader that held the claim binds the pod');
      assert.notEqual(other, '', 'the other replica stepped back');
      assert.equal(await nodeNameOf('stale'), first);
      await settled();
      await checkCluster(['stale']);
    });

    test('calls routed at random, static and dynamic claims, a previous-release writer racing', async (t) => {
      const names = [
        ...Array.from({ length: STATIC_PODS / 2 }, (_, i) => `static-${i}`),
        ...Array.from({ length: DYNAMIC_PODS / 2 }, (_, i) => `dynamic-${i}`),
      ];
      await inBatches(names, 'random');
      await settled();
      await checkCluster(names);
      await assumptionsDrain();
      // The previous-release writer raced a replica's PV; the PV controller chose between them.
      assert.ok(legacyWrote.size > 0, `a previous-release writer raced a bind (seed ${seed})`);
      const claims = await cluster.api.list<Claim>('PersistentVolumeClaim', 'default');
      const won = [...legacyWrote].filter(
        ([uid, pv]) => claims.find((c) => c.metadata.uid === uid)?.spec.volumeName === pv,
      );
      t.diagnostic(
        `the previous-release writer raced ${legacyWrote.size} binds and its PV was chosen for ${won.length}`,
      );
    });

    test("a pod's filter, bind and retried bind each on another replica", async () => {
      const names = [
        ...Array.from({ length: STATIC_PODS / 2 }, (_, i) => `static-${i + STATIC_PODS / 2}`),
        ...Array.from({ length: DYNAMIC_PODS / 2 }, (_, i) => `dynamic-${i + DYNAMIC_PODS / 2}`),
      ];
      await inBatches(names, 'spread');
      await settled();
      await checkCluster(names);
      await assumptionsDrain();
      // The races happened: some binds lost, and every pod that could get a volume got one.
      assert.ok(
        answers.some((a) => names.includes(a.pod) && a.error !== ''),
        `some binds stepped back (seed ${seed})`,
      );
      const bound = (await cluster.api.list<Pod>('Pod', 'default')).filter((p) => p.spec.nodeName).length;
      assert.equal(
        bound,
        NODES * PVS_PER_NODE + DYNAMIC_PODS,
        `every PV used once, every dynamic pod bound (seed ${seed})`,
      );
    });
  });

  // The same rules with real kube-schedulers (full delegation, node-cache mode) binding concurrently through both
  // replicas: more pods than PVs, created at once; each kube-scheduler's binding cycles run in parallel, and a pod's
  // filter and bind go to different replicas.
  for (const binary of found.components?.kubeSchedulers ?? []) {
    const name = `multi-${binary.version.replaceAll('.', '-')}`;
    test(`${binary.version}: pods bound by kube-scheduler through both replicas`, async () => {
      await cluster.scheduler(binary, name, { mode: 'delegated', nodeCacheCapable: true });
      const localClass = `${name}-local`;
      const objects: KubeObject[] = [created(build.makeStorageClass(localClass))];
      for (let n = 0; n < NODES; n++)
        objects.push(
          localPV(`${name}-${n}-a`, `node-${n}`, '10Gi', localClass),
          localPV(`${name}-${n}-b`, `node-${n}`, '10Gi', localClass),
        );
      const pods = Array.from({ length: 2 * NODES + 2 }, (_, i) => `${name}-${i}`);
      for (const p of pods) objects.push(claim(`${p}-data`, localClass));
      const dynamic = [`${name}-dyn-0`, `${name}-dyn-1`];
      for (const p of dynamic) objects.push(claim(`${p}-data`, CSI_CLASS));
      const before = new Map(serviceBinds);
      await cluster.add(...objects);
      await cluster.add(...[...pods, ...dynamic].map((p) => pendingPod(p, name, { claims: [`${p}-data`] })));
      const boundOf = async () =>
        (await cluster.api.list<Pod>('Pod', 'default')).filter(
          (p) => p.metadata.name.startsWith(`${name}-`) && p.spec.nodeName,
        );
      await waitFor(
        `every PV used once, every dynamic pod bound`,
        async () => (await boundOf()).length === 2 * NODES + 2,
        120_000,
      ).catch((err) => {
        throw new Error(
          `${(err as Error).message}\n${[...pods, ...dynamic].map((p) => cluster.whyNotBound(p)).join('\n')}`,
        );
      });
      // The two pods left over are unschedulable (no PV left), not bound.
      const boundNames = new Set((await boundOf()).map((b) => b.metadata.name));
      for (const p of pods) if (!boundNames.has(p)) await cluster.unschedulable(p);
      assert.equal((await boundOf()).length, 2 * NODES + 2);
      await settled();
      await checkCluster([...pods, ...dynamic]);
      await assumptionsDrain();
      assert.deepEqual(
        instances.map((i) => (serviceBinds.get(i.url) ?? 0) > (before.get(i.url) ?? 0)),
        [true, true],
        'both replicas bound pods',
      );
    });
  }
}
