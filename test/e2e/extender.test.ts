// End to end: the real CLI against the fake API server, as kube-scheduler would call it.
// One fake cluster and one extender process for the file; every test uses its own pods, claims and volumes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { boundClaim, node, pod, provisionClaim, pv, pvc, storageClass, waitFor } from '../cluster/kube/helpers.ts';
import { accessOf, allows, type PolicyRule, renderChart } from '../helpers/chart.ts';
import { type ExtenderProcess, startExtender } from './extender-process.ts';
import { FakeApiServer, writeKubeconfig } from './fake-apiserver.ts';

const STALE_SECONDS = 10;
let server: FakeApiServer;
let extender: ExtenderProcess;
let readyzBeforeSync: { status: number; body: { notSynced: string[] } } | undefined;

interface CacheDiff {
  consistent: boolean;
  counts: { apiNodes: number; apiPods: number; apiAssignedPods: number; cacheNodes: number; cachePods: number };
  cache: { assumed: { name: string; api: string }[] };
}

async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${extender.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

const podObject = (name: string) => server.get('Pod', name, 'default')!;

async function filter(name: string, nodes: string[]) {
  const { status, body } = await call<{
    NodeNames: string[] | null;
    FailedNodes: Record<string, string>;
    FailedAndUnresolvableNodes: Record<string, string>;
    Error: string;
  }>('POST', '/scheduler/filter', { Pod: podObject(name), Nodes: null, NodeNames: nodes });
  assert.equal(status, 200);
  return body;
}

async function bind(name: string, nodeName: string, uid = podObject(name).metadata.uid!) {
  const { status, body } = await call<{ Error: string }>('POST', '/scheduler/bind', {
    PodName: name,
    PodNamespace: 'default',
    PodUID: uid,
    Node: nodeName,
  });
  assert.equal(status, 200);
  return body.Error;
}

async function cacheDiff(): Promise<CacheDiff> {
  const { status, body } = await call<CacheDiff>('GET', '/api/v1/debug/cache-diff');
  assert.equal(status, 200);
  return body;
}

/** Waits until the cache and the store equal a fresh list from the fake server. */
async function waitConsistent(): Promise<CacheDiff> {
  return waitFor('cache equals the API server state', async () => {
    const diff = await cacheDiff();
    return diff.consistent && diff.counts.cacheNodes === server.list('Node').length ? diff : undefined;
  });
}

async function readyz() {
  return call<{ ready: boolean; notSynced: string[]; stale: string[] }>('GET', '/readyz');
}

/** The PV controller, as far as these tests need it: a PV given a claimRef binds its claim. */
function simulatePvController(): void {
  server.onWrite = (write) => {
    const claim = /^\/api\/v1\/namespaces\/([^/]+)\/persistentvolumeclaims\/([^/]+)$/.exec(write.path);
    if (claim && write.status < 300) setTimeout(() => provisionClaim(server, claim[1], claim[2]), 5);
    const m = /^\/api\/v1\/persistentvolumes\/([^/]+)$/.exec(write.path);
    if (!m || write.status >= 300) return;
    setTimeout(() => {
      const volume = server.get('PersistentVolume', m[1]);
      if (!volume) return;
      const ref = (volume.spec as { claimRef?: { name: string; namespace: string; uid?: string } }).claimRef;
      if (!ref?.uid) return;
      const claim = server.get('PersistentVolumeClaim', ref.name, ref.namespace);
      if (!claim || claim.metadata.uid !== ref.uid) return;
      server.update(boundClaim(claim, volume.metadata.name, '10Gi'));
      server.update({ ...volume, status: { phase: 'Bound' } });
    }, 5);
  };
}

before(async () => {
  server = new FakeApiServer({ bookmarkIntervalMs: 100 });
  await server.start();
  server.add(node('node-a', { 'topology.kubernetes.io/zone': 'zone-a' }));
  server.add(node('node-b', { 'topology.kubernetes.io/zone': 'zone-b' }));
  // One local volume per node, each in its own class, so each claim can only go to one node.
  server.add(storageClass('local-a'), storageClass('local-b'));
  server.add(pv('pv-a', { node: 'node-a', storageClassName: 'local-a' }), pvc('data', { storageClassName: 'local-a' }));
  server.add(
    pv('pv-b', { node: 'node-b', storageClassName: 'local-b' }),
    pvc('data2', { storageClassName: 'local-b' }),
  );
  server.add(pod('web', { claims: ['data'] }), pod('web2', { claims: ['data2'] }));
  // A CSI class that provisions on demand, in the zone of the node the pod goes to.
  server.add(storageClass('ebs', 'ebs.csi.aws.com'));
  server.add(pvc('dyn-data', { storageClassName: 'ebs' }), pod('dyn', { claims: ['dyn-data'] }));
  server.add(pod('plain'), pod('retry'), pod('running', { nodeName: 'node-a' }));
  simulatePvController();
  // The nodes' list is held until the extender has been asked once, so it is seen listening but not ready however
  // slowly the machine starts it (a 200 ms delay was not enough under load).
  const releaseNodes = server.hold((r) => r.method === 'GET' && r.path === '/api/v1/nodes' && !r.watch);
  // Generous, so a slow machine never makes a watch stale on its own: the staleness test silences the watches itself
  // and waits (bookmarks come every 100 ms, so a threshold of seconds is never reached unless a test silences them).
  extender = await startExtender(await writeKubeconfig(server.url), ['--watch-stale-seconds', String(STALE_SECONDS)]);
  const early = await readyz();
  readyzBeforeSync = { status: early.status, body: early.body };
  releaseNodes();
});

after(async () => {
  const code = await extender?.stop();
  await server?.stop();
  assert.equal(code, 0, 'the extender exits cleanly on SIGTERM');
  const errors = extender.logs.filter((l) => l.level >= 50);
  assert.deepEqual(errors, [], 'no error logs during the run');
});

describe('extender against an API server', () => {
  test('initial sync: 503 until every kind is listed, then ready', async () => {
    assert.equal(readyzBeforeSync?.status, 503);
    assert.ok(readyzBeforeSync!.body.notSynced.length > 0);
    // The body checked is the one that said 200: a second request could see a later state.
    const { body } = await waitFor('ready', async () => {
      const r = await readyz();
      return r.status === 200 ? r : undefined;
    });
    assert.deepEqual(body.notSynced, []);
    assert.deepEqual(body.stale, []);
    await waitFor('the sync logged', () => extender.logs.some((l) => l.msg === 'cluster state synced'));
    await waitConsistent();
  });

  test('filter → prioritize → bind writes the PV binding and then the pod Binding', async () => {
    await waitFor('ready', async () => (await readyz()).status === 200);
    const filtered = await filter('web', ['node-a', 'node-b']);
    assert.equal(filtered.Error, '');
    assert.deepEqual(filtered.NodeNames, ['node-a']);
    assert.match(
      filtered.FailedNodes['node-b'] ?? filtered.FailedAndUnresolvableNodes['node-b'] ?? '',
      /didn't find available persistent volumes to bind|node affinity/,
    );
    const prioritized = await call<{ Host: string; Score: number }[]>('POST', '/scheduler/prioritize', {
      Pod: podObject('web'),
      Nodes: null,
      NodeNames: ['node-a'],
    });
    assert.equal(prioritized.status, 200);
    assert.equal(prioritized.body[0].Host, 'node-a');
    assert.ok(Number.isInteger(prioritized.body[0].Score));

    const from = server.writes.length;
    assert.equal(await bind('web', 'node-a'), '');
    const writes = server.writes.slice(from).filter((w) => w.status < 300);
    const pvWrite = writes.findIndex((w) => w.path === '/api/v1/persistentvolumes/pv-a');
    const binding = writes.findIndex((w) => w.path === '/api/v1/namespaces/default/pods/web/binding');
    assert.ok(pvWrite >= 0, 'the PV was written');
    assert.ok(binding > pvWrite, 'the Binding comes after the volume is bound');
    assert.equal(writes[pvWrite].contentType, 'application/merge-patch+json');
    const claimRef = (writes[pvWrite].body as { spec: { claimRef: { name: string; uid: string } } }).spec.claimRef;
    assert.equal(claimRef.name, 'data');
    assert.equal(claimRef.uid, server.get('PersistentVolumeClaim', 'data', 'default')!.metadata.uid);
    assert.deepEqual((writes[binding].body as { target: unknown }).target, {
      apiVersion: 'v1',
      kind: 'Node',
      name: 'node-a',
    });
    assert.equal((podObject('web').spec as { nodeName?: string }).nodeName, 'node-a');
    const diff = await waitConsistent();
    assert.deepEqual(diff.cache.assumed, []);
  });

  test('a claim to provision: bind annotates the PVC with the node, waits for the provisioner, then binds the pod', async () => {
    await waitFor('ready', async () => (await readyz()).status === 200);
    assert.deepEqual((await filter('dyn', ['node-a', 'node-b'])).NodeNames, ['node-a', 'node-b']);
    const from = server.writes.length;
    assert.equal(await bind('dyn', 'node-b'), '');
    const writes = server.writes.slice(from).filter((w) => w.status < 300);
    const pvcWrite = writes.findIndex((w) => w.path === '/api/v1/namespaces/default/persistentvolumeclaims/dyn-data');
    const binding = writes.findIndex((w) => w.path === '/api/v1/namespaces/default/pods/dyn/binding');
    assert.ok(pvcWrite >= 0, 'the PVC was written');
    assert.ok(binding > pvcWrite, 'the Binding comes after the claim is provisioned');
    const annotations = (writes[pvcWrite].body as { metadata: { annotations: Record<string, string> } }).metadata
      .annotations;
    assert.equal(annotations['volume.kubernetes.io/selected-node'], 'node-b');
    assert.equal(writes[pvcWrite].contentType, 'application/merge-patch+json');
    const claim = server.get('PersistentVolumeClaim', 'dyn-data', 'default')!;
    assert.deepEqual(claim.metadata.finalizers, ['kubernetes.io/pvc-protection'], 'the write kept the finalizer');
    await waitConsistent();
  });

  test('a pod is assumed at bind and confirmed by the watch', async () => {
    // With the watches held back, the bound pod can only be known as assumed.
    server.silenceWatches(true);
    try {
      assert.equal(await bind('plain', 'node-b'), '');
      const assumed = await call<{ items: { name: string; nodeName: string; bindingFinished: boolean }[] }>(
        'GET',
        '/api/v1/pods/assumed',
      );
      assert.deepEqual(
        assumed.body.items.map((a) => [a.name, a.nodeName, a.bindingFinished]),
        [['plain', 'node-b', true]],
      );
      const diff = await cacheDiff();
      assert.deepEqual(
        diff.cache.assumed.map((a) => [a.name, a.api]),
        [['plain', 'bound-here']],
      );
    } finally {
      server.silenceWatches(false);
    }
    await waitFor('confirmed by the watch', async () => {
      const assumed = await call<{ items: unknown[] }>('GET', '/api/v1/pods/assumed');
      return assumed.body.items.length === 0;
    });
    await waitConsistent();
  });

  test('a bind retried for the same UID gets the same answer; another node is refused', async () => {
    assert.equal(await bind('retry', 'node-a'), '');
    assert.equal(await bind('retry', 'node-a'), '');
    const other = await bind('retry', 'node-b');
    assert.match(other, /node-a/);
    const bindings = server.writes.filter((w) => w.path === '/api/v1/namespaces/default/pods/retry/binding');
    assert.equal(bindings.filter((w) => w.status === 201).length, 1, 'one Binding created');
    await waitConsistent();
  });

  test('a 409 on the PV write fails the bind without leaking an assumption, and a retry then succeeds', async () => {
    await waitFor('ready', async () => (await readyz()).status === 200);
    assert.deepEqual((await filter('web2', ['node-a', 'node-b'])).NodeNames, ['node-b']);
    server.conflictNextPut('/api/v1/persistentvolumes/pv-b');
    const error = await bind('web2', 'node-b');
    assert.match(error, /409|Conflict/);
    assert.equal((server.get('PersistentVolume', 'pv-b')!.spec as { claimRef?: unknown }).claimRef, undefined);
    assert.equal((podObject('web2').spec as { nodeName?: string }).nodeName, undefined);
    const assumed = await call<{ items: unknown[] }>('GET', '/api/v1/pods/assumed');
    assert.deepEqual(assumed.body.items, []);
    // Nothing held on to: the PV is still available to the claim, and binding again works.
    assert.deepEqual((await filter('web2', ['node-a', 'node-b'])).NodeNames, ['node-b']);
    assert.equal(await bind('web2', 'node-b'), '');
    assert.equal((podObject('web2').spec as { nodeName?: string }).nodeName, 'node-b');
    await waitConsistent();
  });

  test('a dropped watch recovers and no event is lost', async () => {
    await waitConsistent();
    // Every watch breaks, and the first reconnects fail, while the cluster keeps changing.
    server.failNext(/^\/api\/v1\/(nodes|pods)$/, 4, 503, 'GET', true);
    server.dropWatches();
    server.add(node('node-c', { 'topology.kubernetes.io/zone': 'zone-c' }));
    server.add(pod('late', { nodeName: 'node-c' }));
    server.remove('Pod', 'running', 'default');
    const diff = await waitConsistent();
    assert.equal(diff.counts.apiNodes, 3);
    assert.equal(diff.counts.cachePods, diff.counts.apiAssignedPods);
    await waitFor('ready again', async () => (await readyz()).status === 200);
  });

  test('a 410 Gone relists and no event is lost', async () => {
    await waitConsistent();
    server.silenceWatches(true);
    server.remove('Node', 'node-c');
    server.remove('Pod', 'late', 'default');
    server.add(pod('after-gone', { nodeName: 'node-b' }));
    server.compact();
    server.dropWatches();
    server.silenceWatches(false);
    const diff = await waitConsistent();
    assert.equal(diff.counts.apiNodes, 2);
    await waitFor('the relist logged', () => extender.logs.some((l) => String(l.msg).includes('410 Gone')));
    const metrics = await fetch(`${extender.url}/metrics`).then((r) => r.text());
    assert.match(metrics, /\S/);
  });

  test('readiness turns 503 while a watch is stale and back to 200', async () => {
    await waitFor('ready', async () => (await readyz()).status === 200);
    server.silenceWatches(true);
    try {
      const stale = await waitFor('not ready while stale', async () => {
        const r = await readyz();
        return r.status === 503 ? r : undefined;
      });
      assert.ok(stale.body.stale.length > 0);
      assert.deepEqual(stale.body.notSynced, []);
    } finally {
      server.silenceWatches(false);
    }
    await waitFor('ready again', async () => (await readyz()).status === 200);
  });

  // Last: by now the extender has listed, watched, bound pods and delegated volumes, and retried after a conflict.
  test("every API request it made is allowed by the chart's RBAC for delegated binding", async () => {
    const objects = await renderChart(['--set', 'delegateVolumeBinding=true']);
    const role = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name.endsWith('-extender')) as unknown as {
      rules: PolicyRule[];
    };
    const needed = new Set(server.requests.map((r) => JSON.stringify(accessOf(r.method, r.path, r.watch))));
    const denied = [...needed].filter((a) => !allows(role.rules, JSON.parse(a)));
    assert.deepEqual(denied, []);
    for (const write of ['create /pods/binding', 'patch /persistentvolumes', 'patch /persistentvolumeclaims']) {
      assert.ok(
        [...needed].some((a) => {
          const { verb, group, resource } = JSON.parse(a);
          return `${verb} ${group}/${resource}` === write;
        }),
        `the scenario exercised ${write}`,
      );
    }
  });
});
