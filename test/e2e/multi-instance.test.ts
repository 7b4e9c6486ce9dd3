// Several extender replicas against one API server, as a rollout, `replicaCount: 2` or a leader handover make them:
// two real CLI processes share the fake cluster, kube-scheduler's calls go to either (at random, or a pod's filter,
// bind and retried bind each on another one), static local claims and dynamically provisioned ones, and a stale
// leader whose bind is still in flight while the other replica binds the same pod. A writer of the previous release
// (PV claimRefs without the claim hold) races some binds, as a rolling update from it would.
//
// Whatever the interleaving: no pod is bound to a node its volumes do not fit, no claim is ever named by two PVs that
// replicas wrote, none is named by two PVs once the PV controller settles, every bind answer is true, and every
// replica's assumptions drain.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { node, pod, pv, pvc, storageClass, waitFor } from '../cluster/kube/helpers.ts';
import { type ExtenderProcess, startExtender } from './extender-process.ts';
import { type FakeApiServer, type FakeObject, FakeApiServer as Server, writeKubeconfig } from './fake-apiserver.ts';
import { annotationsOf, FakeVolumeControllers, specOf } from './racing-volume-controllers.ts';

const NODES = 4;
const PVS_PER_NODE = 3;
const STATIC_PODS = 16; // more than the 12 local PVs: some binds must lose
const DYNAMIC_PODS = 6;
const LEGACY_RACED = 4; // static pods whose claim a previous-release writer also prebinds
const ATTEMPTS = 6;

let server: FakeApiServer;
const instances: ExtenderProcess[] = [];
/** A small seeded generator: a failing interleaving can be replayed with SEED. */
const seed = Number(process.env.SEED ?? Date.now() % 100_000);
let state = seed;
function random(): number {
  state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
  return state / 2 ** 31;
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];

// ---- the PV controller and the external provisioner (volume-controllers.ts), and what replicas wrote ----

let controllers: FakeVolumeControllers;
/** PV name → the claim UID a replica's write pointed it at (the arbiter check: never two live ones per claim). */
const replicaClaimRefs = new Map<string, string>();
const doubleNamed: string[] = [];

/** A replica of the previous release: it prebinds a free PV on another node to the claim, without holding the claim. */
function legacyPrebind(claim: FakeObject, notOn: string): void {
  const free = server
    .list('PersistentVolume')
    .find(
      (v) =>
        !specOf(v).claimRef && !JSON.stringify(v.spec).includes(`"${notOn}"`) && v.metadata.name.startsWith('local-'),
    );
  if (!free) return;
  const { namespace, name, uid } = claim.metadata;
  server.update({
    ...free,
    metadata: {
      ...free.metadata,
      annotations: { ...annotationsOf(free), 'pv.kubernetes.io/bound-by-controller': 'yes' },
    },
    spec: { ...specOf(free), claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace, name, uid } },
  });
  setTimeout(() => controllers.syncClaim(uid!), 5);
}

/** Each PV a replica wrote: no other PV a replica wrote may name the claim; a legacy-* claim is raced. */
function pvWritten(volume: FakeObject, uid: string): void {
  replicaClaimRefs.set(volume.metadata.name, uid);
  const live = [...replicaClaimRefs].filter(
    ([name, claimUid]) => claimUid === uid && specOf(server.get('PersistentVolume', name)!).claimRef?.uid === uid,
  );
  const claim = controllers.claimByUid(uid);
  if (live.length > 1) doubleNamed.push(`${claim?.metadata.name}: ${live.map(([n]) => n).join(', ')}`);
  if (claim?.metadata.name.startsWith('legacy-') && !specOf(claim).volumeName) {
    legacyPrebind(claim, JSON.stringify(volume.spec).match(/"(node-\d+)"/)?.[1] ?? '');
  }
}

// ---- kube-scheduler, as far as it calls extenders ----

interface Answer {
  pod: string;
  node: string;
  error: string;
  /** server.writes.length when the answer arrived: a Binding recorded after it cannot make an Error false. */
  writesAt: number;
}
const answers: Answer[] = [];

/**
 * A 503 is a call refused before it was computed (admission or the verb queue shedding load: two test files beside
 * this one on two cores are enough). kube-scheduler retries such a pod after a backoff; this one resends the call after
 * its Retry-After, which is the same for the races under test: nothing was decided or written.
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

async function filter(instance: ExtenderProcess, name: string): Promise<string[]> {
  const nodeNames = Array.from({ length: NODES }, (_, i) => `node-${i}`);
  const body = await call<{ NodeNames: string[] | null; Error: string }>(instance, '/scheduler/filter', {
    Pod: server.get('Pod', name, 'default'),
    Nodes: null,
    NodeNames: nodeNames,
  });
  assert.equal(body.Error, '');
  return body.NodeNames ?? [];
}

async function bind(instance: ExtenderProcess, name: string, nodeName: string): Promise<string> {
  const p = server.get('Pod', name, 'default')!;
  const { Error: error } = await call<{ Error: string }>(instance, '/scheduler/bind', {
    PodName: name,
    PodNamespace: 'default',
    PodUID: p.metadata.uid,
    Node: nodeName,
  });
  answers.push({ pod: name, node: nodeName, error, writesAt: server.writes.length });
  return error;
}

const nodeNameOf = (name: string) => (server.get('Pod', name, 'default')!.spec as { nodeName?: string }).nodeName;

/**
 * One pod through filter and bind until bound (or out of attempts: the local PVs run out). Half the time the bind is
 * also retried on another replica, as after a timed-out reply or by a new leader that filtered again, while the first
 * is still in flight.
 */
async function schedule(name: string, routing: 'random' | 'spread'): Promise<void> {
  for (let attempt = 0; attempt < ATTEMPTS && !nodeNameOf(name); attempt++) {
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

function nodeFits(volume: FakeObject, nodeName: string): boolean {
  const labels = server.get('Node', nodeName)!.metadata.labels as Record<string, string>;
  const terms =
    (
      volume.spec as {
        nodeAffinity?: {
          required?: { nodeSelectorTerms?: { matchExpressions?: { key: string; values: string[] }[] }[] };
        };
      }
    ).nodeAffinity?.required?.nodeSelectorTerms ?? [];
  return terms.some((t) => (t.matchExpressions ?? []).every((e) => e.values.includes(labels[e.key])));
}

function checkCluster(): void {
  // Every bound pod's volumes fit its node.
  for (const p of server.list('Pod')) {
    const nodeName = (p.spec as { nodeName?: string }).nodeName;
    const claims = ((p.spec as { volumes?: { persistentVolumeClaim?: { claimName: string } }[] }).volumes ?? [])
      .map((v) => v.persistentVolumeClaim?.claimName)
      .filter((c): c is string => !!c);
    if (!nodeName || claims.length === 0) continue;
    for (const c of claims) {
      const claim = server.get('PersistentVolumeClaim', c, 'default')!;
      const volumeName = specOf(claim).volumeName;
      assert.ok(
        volumeName,
        `pod ${p.metadata.name} is bound to ${nodeName} but its claim ${c} is not bound (seed ${seed})`,
      );
      const volume = server.get('PersistentVolume', volumeName)!;
      assert.ok(
        nodeFits(volume, nodeName),
        `pod ${p.metadata.name} stranded on ${nodeName}: ${volumeName} is elsewhere (seed ${seed})`,
      );
    }
  }
  // No claim named by two PVs once the PV controller settled; none was ever named by two PVs replicas wrote.
  const byClaim = new Map<string, string[]>();
  for (const v of server.list('PersistentVolume')) {
    const uid = specOf(v).claimRef?.uid;
    if (uid) byClaim.set(uid, [...(byClaim.get(uid) ?? []), v.metadata.name]);
  }
  assert.deepEqual(
    [...byClaim.values()].filter((names) => names.length > 1),
    [],
    `seed ${seed}`,
  );
  assert.deepEqual(doubleNamed, [], `claims named by two PVs replicas wrote (seed ${seed})`);
  // Every answer is true: '' means bound there; an Error means no Binding there had landed when it was given.
  for (const a of answers) {
    if (a.error === '') {
      assert.equal(nodeNameOf(a.pod), a.node, `bind of ${a.pod} to ${a.node} answered success (seed ${seed})`);
      continue;
    }
    const landed = server.writes
      .slice(0, a.writesAt)
      .some(
        (w) =>
          w.path === `/api/v1/namespaces/default/pods/${a.pod}/binding` &&
          w.status < 300 &&
          (w.body as { target: { name: string } }).target.name === a.node,
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
      const volumes = [...metrics.matchAll(/^topology_extender_volumes_assumed\{[^}]*\} (\d+)$/gm)];
      return items.length === 0 && volumes.length === 2 && volumes.every((m) => m[1] === '0');
    });
  }
}

before(async () => {
  server = new Server({ bookmarkIntervalMs: 100 });
  await server.start();
  for (let n = 0; n < NODES; n++) {
    server.add(
      node(`node-${n}`, { 'kubernetes.io/hostname': `node-${n}`, 'topology.kubernetes.io/zone': `zone-${n % 2}` }),
    );
    for (let i = 0; i < PVS_PER_NODE; i++) server.add(pv(`local-${n}-${i}`, { node: `node-${n}` }));
  }
  server.add(storageClass('local'), storageClass('ebs', 'ebs.csi.aws.com'));
  for (let i = 0; i < STATIC_PODS; i++) {
    const claimName = i < LEGACY_RACED ? `legacy-${i}` : `data-${i}`;
    server.add(pvc(claimName), pod(`static-${i}`, { claims: [claimName] }));
  }
  for (let i = 0; i < DYNAMIC_PODS; i++) {
    server.add(pvc(`dyn-${i}`, { storageClassName: 'ebs' }), pod(`dynamic-${i}`, { claims: [`dyn-${i}`] }));
  }
  server.add(pvc('stale-data'), pod('stale', { claims: ['stale-data'] }));
  controllers = new FakeVolumeControllers(server, pvWritten, (name) => replicaClaimRefs.delete(name));
  const kubeconfig = await writeKubeconfig(server.url);
  instances.push(...(await Promise.all([startExtender(kubeconfig), startExtender(kubeconfig)])));
  for (const instance of instances) {
    await waitFor('ready', async () => (await fetch(`${instance.url}/readyz`)).ok);
  }
});

after(async () => {
  const codes = await Promise.all(instances.map((i) => i.stop()));
  await server?.stop();
  assert.deepEqual(codes, [0, 0], 'every replica exits cleanly on SIGTERM');
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
    controllers.paused.add('stale-data'); // the PV controller is slow: the leader's bind waits with its writes done
    const stale = bind(leader, 'stale', first);
    await waitFor('the leader wrote its PV', () =>
      server.list('PersistentVolume').some((v) => specOf(v).claimRef?.name === 'stale-data'),
    );
    const other = await bind(successor, 'stale', second);
    controllers.settle();
    const answer = await stale;
    assert.equal(answer, '', 'the leader that held the claim binds the pod');
    assert.notEqual(other, '', 'the other replica stepped back');
    assert.equal(nodeNameOf('stale'), first);
    checkCluster();
  });

  test('calls routed at random, static and dynamic claims, a previous-release writer racing', async () => {
    const names = [
      ...Array.from({ length: STATIC_PODS / 2 }, (_, i) => `static-${i}`),
      ...Array.from({ length: DYNAMIC_PODS / 2 }, (_, i) => `dynamic-${i}`),
    ];
    await inBatches(names, 'random');
    controllers.settle();
    checkCluster();
    await assumptionsDrain();
  });

  test("a pod's filter, bind and retried bind each on another replica", async () => {
    const names = [
      ...Array.from({ length: STATIC_PODS / 2 }, (_, i) => `static-${i + STATIC_PODS / 2}`),
      ...Array.from({ length: DYNAMIC_PODS / 2 }, (_, i) => `dynamic-${i + DYNAMIC_PODS / 2}`),
    ];
    await inBatches(names, 'spread');
    controllers.settle();
    checkCluster();
    await assumptionsDrain();
    // The races happened: some binds lost, and every pod that could get a volume got one.
    assert.ok(
      answers.some((a) => a.error !== ''),
      `some binds stepped back (seed ${seed})`,
    );
    const bound = server.list('Pod').filter((p) => (p.spec as { nodeName?: string }).nodeName).length;
    assert.equal(
      bound,
      NODES * PVS_PER_NODE + DYNAMIC_PODS,
      `every PV used once, every dynamic pod bound (seed ${seed})`,
    );
  });
});
