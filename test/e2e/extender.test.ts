// End to end: the real CLI against a real control plane (kube-apiserver, etcd, the PV controller), called as
// kube-scheduler would call it, authenticated as the chart's ServiceAccount with exactly the chart's RBAC for
// delegated binding, and reaching the API server through a proxy that injects what a healthy API server will not do
// on request (a failing watch, an expired resourceVersion, a stalled stream). One cluster and one extender process for
// the file; every test uses its own pods, claims and volumes. Least privilege is proven both ways: every request the
// extender made was authorized by the chart's rules (the API server's audit log), and removing one rule it needs
// fails it visibly.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import { kubeComponents } from '../components/components.ts';
import type { KubeObject } from '../components/kube-api.ts';
import { allows, CHART, helm, type PolicyRule, parseObjects, renderChart } from '../helpers/chart.ts';
import * as build from '../helpers/objects.ts';
import { assertExitedCleanly, type ExtenderProcess, startExtender } from './extender-process.ts';
import { withoutGrants } from './extender-rbac.ts';
import {
  CSI_CLASS,
  claim,
  clusterNode,
  clusterObjects,
  localPV,
  pendingPod,
  runningPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

const found = await kubeComponents();
const RBAC_KINDS = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
/** No kube-scheduler runs here: the tests call the verbs themselves. */
const NO_SCHEDULER = 'nobody';
// A real API server sends a quiet watch no bookmark for minutes, and what the extender makes of a silent watch is being
// reworked: the file's extender never calls a watch silent, so only the faults the tests inject make one stale.
// TODO(issue 31): a test that leaves a kind quiet past the silence limit belongs with that rework.
const EXTENDER_ARGS = ['--watch-stale-seconds', '3600', '--bind-timeout-seconds', '20'];
let cluster: SchedulerCluster;
let readyzBeforeSync: { status: number; body: { notSynced: string[] } } | undefined;

interface CacheDiff {
  consistent: boolean;
  counts: { apiNodes: number; apiPods: number; apiAssignedPods: number; cacheNodes: number; cachePods: number };
  cache: { assumed: { name: string; api: string }[] };
}

async function callOn<T>(
  extender: Pick<ExtenderProcess, 'url'>,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${extender.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

const call = <T>(method: 'GET' | 'POST', path: string, body?: unknown) =>
  callOn<T>(cluster.extender, method, path, body);

type PodObject = KubeObject & { metadata: { uid: string }; spec: { nodeName?: string } };
async function podObject(name: string): Promise<PodObject> {
  const pod = await cluster.api.get<PodObject>('Pod', name, 'default');
  assert.ok(pod, `pod ${name} exists`);
  return pod;
}

async function filter(name: string, nodes: string[]) {
  const { status, body } = await call<{
    NodeNames: string[] | null;
    FailedNodes: Record<string, string>;
    FailedAndUnresolvableNodes: Record<string, string>;
    Error: string;
  }>('POST', '/scheduler/filter', { Pod: await podObject(name), Nodes: null, NodeNames: nodes });
  assert.equal(status, 200);
  return body;
}

async function bindOn(extender: Pick<ExtenderProcess, 'url'>, name: string, nodeName: string): Promise<string> {
  const { status, body } = await callOn<{ Error: string }>(extender, 'POST', '/scheduler/bind', {
    PodName: name,
    PodNamespace: 'default',
    PodUID: (await podObject(name)).metadata.uid,
    Node: nodeName,
  });
  assert.equal(status, 200);
  return body.Error;
}

const bind = (name: string, nodeName: string) => bindOn(cluster.extender, name, nodeName);

async function cacheDiff(): Promise<CacheDiff> {
  const { status, body } = await call<CacheDiff>('GET', '/api/v1/debug/cache-diff');
  assert.equal(status, 200);
  return body;
}

/** Waits until the cache and the store equal a fresh list from the API server (its own lists may meet a fault). */
async function waitConsistent(): Promise<CacheDiff> {
  return waitFor(
    'cache equals the API server state',
    async () => {
      const { status, body } = await call<CacheDiff>('GET', '/api/v1/debug/cache-diff');
      if (status !== 200 || !body.consistent) return undefined;
      return body.counts.cacheNodes === (await cluster.api.list('Node')).length ? body : undefined;
    },
    60_000,
  );
}

async function readyz(extender: Pick<ExtenderProcess, 'url'> = cluster.extender) {
  return callOn<{ ready: boolean; notSynced: string[]; stale: string[] }>(extender, 'GET', '/readyz');
}

const ready = (extender?: Pick<ExtenderProcess, 'url'>) =>
  waitFor('ready', async () => (await readyz(extender)).status === 200, 60_000);

/** Writes the API server completed for the extender since `mark` (a count of writes()), in order. */
async function extenderWrites(mark: number) {
  return (await cluster.writes()).slice(mark).filter((w) => w.user === cluster.extenderUser && w.status < 300);
}

/** The request the extender sent through the proxy last for `method path`. */
function proxied(method: string, path: string) {
  return cluster.proxy.requests.findLast((r) => r.method === method && r.path === path);
}

const objects = (): KubeObject[] => [
  ...clusterNode('node-a', 'zone-a'),
  ...clusterNode('node-b', 'zone-b'),
  // One local volume per node, each in its own class, so each claim can only go to one node.
  created(build.makeStorageClass('local-a')),
  created(build.makeStorageClass('local-b')),
  localPV('pv-a', 'node-a', '10Gi', 'local-a'),
  claim('data', 'local-a'),
  localPV('pv-b', 'node-b', '10Gi', 'local-b'),
  claim('data2', 'local-b'),
  pendingPod('web', NO_SCHEDULER, { claims: ['data'] }),
  pendingPod('web2', NO_SCHEDULER, { claims: ['data2'] }),
  // The CSI class that provisions on demand (the stand-in external-provisioner) in the zone of the pod's node, its
  // driver and its capacity per zone.
  ...clusterObjects(0),
  claim('dyn-data', CSI_CLASS),
  pendingPod('dyn', NO_SCHEDULER, { claims: ['dyn-data'] }),
  pendingPod('plain', NO_SCHEDULER),
  pendingPod('retry', NO_SCHEDULER),
  runningPod('running', 'node-a'),
];

if (found.skip) {
  test('the extender against a real API server', { skip: found.skip }, () => {});
} else {
  before(async () => {
    cluster = await startSchedulerCluster(objects(), { extenderArgs: EXTENDER_ARGS });
    // The fixture's extender is ready already: a new one is started with the nodes' list held until it has been asked
    // once, so it is seen listening but not ready however slowly the machine starts it.
    await cluster.stopExtender();
    const releaseNodes = cluster.proxy.hold((r) => r.path === '/api/v1/nodes' && r.method === 'GET');
    try {
      await cluster.startExtender({ ready: false });
      const early = await readyz();
      readyzBeforeSync = { status: early.status, body: early.body };
    } finally {
      releaseNodes();
    }
  });

  after(async () => {
    const extender = cluster?.extender;
    const code = await extender?.stop();
    await cluster?.stop();
    if (extender) assertExitedCleanly(extender, code);
    const errors = extender.logs.filter((l) => l.level >= 50);
    assert.deepEqual(errors, [], 'no error logs during the run');
  });

  describe('extender against an API server', () => {
    test('initial sync: 503 until every kind is listed, then ready', async () => {
      assert.equal(readyzBeforeSync?.status, 503);
      assert.ok(readyzBeforeSync!.body.notSynced.includes('Node'));
      // The body checked is the one that said 200: a second request could see a later state.
      const { body } = await waitFor('ready', async () => {
        const r = await readyz();
        return r.status === 200 ? r : undefined;
      });
      assert.deepEqual(body.notSynced, []);
      assert.deepEqual(body.stale, []);
      await waitFor('the sync logged', () => cluster.extender.logs.some((l) => l.msg === 'cluster state synced'));
      await waitConsistent();
    });

    test('filter → prioritize → bind writes the PV binding and then the pod Binding', async () => {
      await ready();
      const filtered = await filter('web', ['node-a', 'node-b']);
      assert.equal(filtered.Error, '');
      assert.deepEqual(filtered.NodeNames, ['node-a']);
      assert.match(
        filtered.FailedNodes['node-b'] ?? filtered.FailedAndUnresolvableNodes['node-b'] ?? '',
        /didn't find available persistent volumes to bind|node affinity/,
      );
      const prioritized = await call<{ Host: string; Score: number }[]>('POST', '/scheduler/prioritize', {
        Pod: await podObject('web'),
        Nodes: null,
        NodeNames: ['node-a'],
      });
      assert.equal(prioritized.status, 200);
      assert.equal(prioritized.body[0].Host, 'node-a');
      assert.ok(Number.isInteger(prioritized.body[0].Score));

      const mark = (await cluster.writes()).length;
      assert.equal(await bind('web', 'node-a'), '');
      // The audit log holds no bodies: the order from it, the content type from the proxy, the content from the API.
      const writes = await extenderWrites(mark);
      const pvWrite = writes.findIndex((w) => w.method === 'PATCH' && w.path === '/api/v1/persistentvolumes/pv-a');
      const binding = writes.findIndex((w) => w.path === '/api/v1/namespaces/default/pods/web/binding');
      assert.ok(pvWrite >= 0, 'the PV was written');
      assert.ok(binding > pvWrite, 'the Binding comes after the volume is bound');
      assert.equal(proxied('PATCH', '/api/v1/persistentvolumes/pv-a')?.contentType, 'application/merge-patch+json');
      const volume = await cluster.api.get<KubeObject & { spec: { claimRef?: { name: string; uid: string } } }>(
        'PersistentVolume',
        'pv-a',
      );
      const data = await cluster.api.get('PersistentVolumeClaim', 'data', 'default');
      assert.equal(volume?.spec.claimRef?.name, 'data');
      assert.equal(volume?.spec.claimRef?.uid, data?.metadata.uid);
      assert.equal((await podObject('web')).spec.nodeName, 'node-a');
      // The real PV controller completes the binding our claimRef asked for.
      await waitFor(
        'claim data bound to pv-a',
        async () =>
          (await cluster.api.get<KubeObject & { spec: { volumeName?: string } }>('PersistentVolumeClaim', 'data'))?.spec
            .volumeName === 'pv-a',
      );
      const diff = await waitConsistent();
      assert.deepEqual(diff.cache.assumed, []);
    });

    test('a claim to provision: bind annotates the PVC with the node, waits for the provisioner, then binds the pod', async () => {
      await ready();
      assert.deepEqual((await filter('dyn', ['node-a', 'node-b'])).NodeNames, ['node-a', 'node-b']);
      const mark = (await cluster.writes()).length;
      assert.equal(await bind('dyn', 'node-b'), '');
      const writes = await extenderWrites(mark);
      const claimPath = '/api/v1/namespaces/default/persistentvolumeclaims/dyn-data';
      const pvcWrite = writes.findIndex((w) => w.method === 'PATCH' && w.path === claimPath);
      const binding = writes.findIndex((w) => w.path === '/api/v1/namespaces/default/pods/dyn/binding');
      assert.ok(pvcWrite >= 0, 'the PVC was written');
      assert.ok(binding > pvcWrite, 'the Binding comes after the claim is provisioned');
      assert.equal(proxied('PATCH', claimPath)?.contentType, 'application/merge-patch+json');
      const provisioned = await cluster.api.get<
        KubeObject & { metadata: { annotations?: Record<string, string>; finalizers?: string[] } }
      >('PersistentVolumeClaim', 'dyn-data', 'default');
      assert.equal(provisioned?.metadata.annotations?.['volume.kubernetes.io/selected-node'], 'node-b');
      assert.deepEqual(
        provisioned?.metadata.finalizers,
        ['kubernetes.io/pvc-protection'],
        'the write kept the finalizer',
      );
      assert.deepEqual(cluster.provisioner.provisioned, [`pvc-${provisioned?.metadata.uid}`]);
      await waitConsistent();
    });

    test('a pod is assumed at bind and confirmed by the watch', async () => {
      // With the watches held back, the bound pod can only be known as assumed.
      cluster.proxy.silenceWatches(true);
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
        cluster.proxy.silenceWatches(false);
      }
      await waitFor('confirmed by the watch', async () => {
        const assumed = await call<{ items: unknown[] }>('GET', '/api/v1/pods/assumed');
        return assumed.body.items.length === 0;
      });
      await waitConsistent();
    });

    test('a bind retried for the same UID gets the same answer; another node is refused', async () => {
      const mark = (await cluster.writes()).length;
      assert.equal(await bind('retry', 'node-a'), '');
      assert.equal(await bind('retry', 'node-a'), '');
      const other = await bind('retry', 'node-b');
      assert.match(other, /node-a/);
      const bindings = (await cluster.writes())
        .slice(mark)
        .filter((w) => w.path === '/api/v1/namespaces/default/pods/retry/binding');
      assert.deepEqual(
        bindings.map((w) => w.status),
        [201],
        'one Binding created',
      );
      await waitConsistent();
    });

    test('a 409 on the PV write fails the bind without leaking an assumption, and a retry then succeeds', async () => {
      await ready();
      assert.deepEqual((await filter('web2', ['node-a', 'node-b'])).NodeNames, ['node-b']);
      // A real conflict: the PV changes while the extender does not hear of it, so its write carries an old
      // resourceVersion. The node's label, changed after it, tells when the extender has heard again.
      cluster.proxy.silenceWatches(true);
      let error = '';
      try {
        const volume = await cluster.api.get('PersistentVolume', 'pv-b');
        await cluster.api.patch(volume!, { metadata: { labels: { touched: 'conflict' } } });
        const nodeB = await cluster.api.get('Node', 'node-b');
        await cluster.api.patch(nodeB!, { metadata: { labels: { touched: 'conflict' } } });
        error = await bind('web2', 'node-b');
      } finally {
        cluster.proxy.silenceWatches(false);
      }
      assert.match(error, /409|Conflict/);
      const volume = await cluster.api.get<KubeObject & { spec: { claimRef?: unknown } }>('PersistentVolume', 'pv-b');
      assert.equal(volume?.spec.claimRef, undefined);
      assert.equal((await podObject('web2')).spec.nodeName, undefined);
      const assumed = await call<{ items: unknown[] }>('GET', '/api/v1/pods/assumed');
      assert.deepEqual(assumed.body.items, []);
      await waitFor(
        'the extender heard the changes',
        async () =>
          (await call<{ labels: Record<string, string> }>('GET', '/api/v1/nodes/node-b')).body.labels?.touched ===
          'conflict',
      );
      // Nothing held on to: the PV is still available to the claim, and binding again works.
      assert.deepEqual((await filter('web2', ['node-a', 'node-b'])).NodeNames, ['node-b']);
      assert.equal(await bind('web2', 'node-b'), '');
      assert.equal((await podObject('web2')).spec.nodeName, 'node-b');
      await waitConsistent();
    });

    test('a dropped watch recovers and no event is lost', async () => {
      await waitConsistent();
      // Every watch breaks, and the first reconnects of nodes and pods fail, while the cluster keeps changing.
      cluster.proxy.failNextWatch(/^\/api\/v1\/(nodes|pods)$/, 4, 503);
      cluster.proxy.dropWatches();
      await cluster.add(...clusterNode('node-c', 'zone-c'), runningPod('late', 'node-c'));
      // A bound pod's delete is graceful; the fixture finishes it as the node's kubelet would.
      await cluster.api.delete(await podObject('running'));
      await waitFor('pod running gone', async () => !(await cluster.api.get('Pod', 'running', 'default')));
      const diff = await waitConsistent();
      assert.equal(diff.counts.apiNodes, 3);
      assert.equal(diff.counts.cachePods, diff.counts.apiAssignedPods);
      await ready();
    });

    test('a 410 Gone relists and no event is lost', async () => {
      await waitConsistent();
      // The extender hears nothing while the cluster changes, then its watches break and the API server says their
      // resourceVersion is gone (what kube-apiserver answers once it was compacted away).
      cluster.proxy.silenceWatches(true);
      try {
        await cluster.api.delete({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-c' } });
        await cluster.api.delete(await podObject('late'));
        await cluster.add(runningPod('after-gone', 'node-b'));
        await waitFor('pod late gone', async () => !(await cluster.api.get('Pod', 'late', 'default')));
        cluster.proxy.expireNextWatch(/^\/api\/v1\/nodes$/, 1);
        cluster.proxy.expireNextWatch(/^\/api\/v1\/pods$/, 1);
        cluster.proxy.dropWatches();
      } finally {
        cluster.proxy.silenceWatches(false);
      }
      const diff = await waitConsistent();
      assert.equal(diff.counts.apiNodes, 2);
      await waitFor('the relist logged', () => cluster.extender.logs.some((l) => String(l.msg).includes('410 Gone')));
      const metrics = await fetch(`${cluster.extender.url}/metrics`).then((r) => r.text());
      assert.match(metrics, /\S/);
    });

    // On the fake this silenced every watch past the staleness limit. A real API server's quiet watches are silent
    // for minutes anyway, and whether silence makes the extender unready is being reworked (TODO(issue 31)); a watch
    // that keeps failing is stale in any case.
    test('readiness turns 503 while a watch keeps failing and back to 200 once it delivers again', async () => {
      await ready();
      cluster.proxy.failNextWatch(/^\/api\/v1\/nodes$/, 4, 503);
      cluster.proxy.dropWatches();
      const stale = await waitFor('not ready while stale', async () => {
        const r = await readyz();
        return r.status === 503 ? r : undefined;
      });
      assert.deepEqual(stale.body.stale, ['Node']);
      assert.deepEqual(stale.body.notSynced, []);
      // Something for the restored watch to deliver (a quiet kind on a real API server says nothing for minutes).
      const nodeA = await cluster.api.get('Node', 'node-a');
      await cluster.api.patch(nodeA!, { metadata: { labels: { touched: 'stale' } } });
      await ready();
    });

    // Last: by now the extender has listed, watched, bound pods and delegated volumes, and retried after a conflict.
    test("every API request it made was authorized by the chart's RBAC for delegated binding", async () => {
      const events = (await cluster.plane.audit()).filter((e) => e.user.username === cluster.extenderUser);
      assert.ok(events.length > 0, 'the audit log holds the extender’s requests');
      // The extender is the chart's ServiceAccount with the chart's roles only: the API server is the judge.
      const refused = events.filter((e) => e.responseStatus?.code === 403);
      assert.deepEqual(
        refused.map((e) => `${e.verb} ${e.requestURI}`),
        [],
      );
      const objects = await renderChart(['--set', 'mode=extender', '--set', 'delegateVolumeBinding=true']);
      const role = objects.find(
        (o) => o.kind === 'ClusterRole' && o.metadata.name.endsWith('-extender'),
      ) as unknown as {
        rules: PolicyRule[];
      };
      const needed = new Set(
        events.map((e) => {
          const ref = e.objectRef ?? {};
          const resource = ref.subresource ? `${ref.resource}/${ref.subresource}` : (ref.resource ?? '');
          return JSON.stringify({ verb: e.verb, group: ref.apiGroup ?? '', resource, name: ref.name });
        }),
      );
      const denied = [...needed].filter((a) => !allows(role.rules, JSON.parse(a)));
      assert.deepEqual(denied, [], 'every request is one the extender ClusterRole grants');
      const done = events.filter((e) => (e.responseStatus?.code ?? 0) < 300);
      for (const write of ['create /pods/binding', 'patch /persistentvolumes', 'patch /persistentvolumeclaims']) {
        assert.ok(
          done.some((e) => {
            const ref = e.objectRef ?? {};
            const resource = ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource;
            return `${e.verb} ${ref.apiGroup ?? ''}/${resource}` === write;
          }),
          `the scenario exercised ${write}`,
        );
      }
    });
  });

  // Each runs a second extender as the same ServiceAccount, so the first one's log stays free of the errors provoked.
  describe('least privilege: a rule the extender needs, removed, fails it visibly', () => {
    test('without patch on persistentvolumes a delegated bind fails with the 403 naming it, and works once granted', async () => {
      await cluster.add(
        created(build.makeStorageClass('local-lp')),
        localPV('pv-lp', 'node-a', '10Gi', 'local-lp'),
        claim('lp-data', 'local-lp'),
        pendingPod('lp', NO_SCHEDULER, { claims: ['lp-data'] }),
      );
      const second = await startExtender(cluster.kubeconfig, EXTENDER_ARGS);
      try {
        await ready(second);
        await withoutGrants(cluster, [{ verb: 'patch', group: '', resource: 'persistentvolumes' }], async (restore) => {
          const error = await bindOn(second, 'lp', 'node-a');
          assert.match(error, /403/);
          assert.match(error, /cannot patch resource "persistentvolumes"/);
          // The log comes through the extender's stdout: it may be read after the answer.
          const logged = await waitFor('the extender logged the refused write', () =>
            second.logs.find((l) => l.level >= 40 && JSON.stringify(l).includes('persistentvolumes')),
          );
          assert.match(JSON.stringify(logged), /403|[Ff]orbidden/);
          const volume = await cluster.api.get<KubeObject & { spec: { claimRef?: unknown } }>(
            'PersistentVolume',
            'pv-lp',
          );
          assert.equal(volume?.spec.claimRef, undefined);
          assert.equal((await podObject('lp')).spec.nodeName, undefined);

          await restore();
          assert.equal(await bindOn(second, 'lp', 'node-a'), '');
          assert.equal((await podObject('lp')).spec.nodeName, 'node-a');
        });
      } finally {
        await second.stop();
      }
    });

    test('without list on csistoragecapacities the extender never gets ready and says why, and gets ready once granted', async () => {
      await withoutGrants(
        cluster,
        [{ verb: 'list', group: 'storage.k8s.io', resource: 'csistoragecapacities' }],
        async (restore) => {
          const third = await startExtender(cluster.kubeconfig, EXTENDER_ARGS);
          try {
            const logged = await waitFor('the refused list logged', () =>
              third.logs.find((l) => l.level >= 50 && String(l.msg).includes('CSIStorageCapacity')),
            );
            assert.match(logged.msg, /403|[Ff]orbidden/);
            assert.match(logged.msg, /csistoragecapacities/);
            // Every other kind lists; that one keeps it unready.
            const r = await waitFor('every other kind listed', async () => {
              const answer = await readyz(third);
              return answer.body.notSynced.length === 1 ? answer : undefined;
            });
            assert.equal(r.status, 503);
            assert.deepEqual(r.body.notSynced, ['CSIStorageCapacity']);

            await restore();
            await ready(third);
          } finally {
            await third.stop();
          }
        },
      );
    });
  });

  // The other mode the chart renders: kube-scheduler binds, and the extender's role grants reads only.
  describe("least privilege: the chart's filter-only RBAC", () => {
    test('is enough to list and watch everything and answer filter; it grants no write, so a bind is refused', async () => {
      const rendered = parseObjects(
        await helm([
          'template',
          'filter-only',
          CHART,
          '--namespace',
          'kube-system',
          '--set',
          'mode=extender',
          '--set',
          'delegateVolumeBinding=false',
        ]),
      );
      const rbac = rendered.filter((o) => RBAC_KINDS.has(o.kind)) as unknown as KubeObject[];
      await cluster.api.createAll(rbac);
      const account = rbac.find((o) => o.kind === 'ServiceAccount')!;
      const namespace = account.metadata.namespace ?? 'kube-system';
      const user = `system:serviceaccount:${namespace}:${account.metadata.name}`;
      const kubeconfig = await cluster.plane.serviceAccountKubeconfig(
        namespace,
        account.metadata.name,
        cluster.proxy.url,
      );
      const filterOnly = await startExtender(kubeconfig, EXTENDER_ARGS);
      try {
        await ready(filterOnly);
        await cluster.add(pendingPod('filter-only', NO_SCHEDULER));
        const filtered = await callOn<{ NodeNames: string[] | null; Error: string }>(
          filterOnly,
          'POST',
          '/scheduler/filter',
          { Pod: await podObject('filter-only'), Nodes: null, NodeNames: ['node-a', 'node-b'] },
        );
        assert.equal(filtered.status, 200);
        assert.deepEqual(filtered.body.NodeNames, ['node-a', 'node-b']);
        const reads = (await cluster.plane.audit()).filter((e) => e.user.username === user);
        assert.ok(
          reads.some((e) => e.verb === 'watch'),
          'it listed and watched as its own user',
        );
        assert.deepEqual(
          reads.filter((e) => e.responseStatus?.code === 403).map((e) => `${e.verb} ${e.requestURI}`),
          [],
          'nothing it reads is refused',
        );
        const error = await bindOn(filterOnly, 'filter-only', 'node-a');
        assert.match(error, /403|[Ff]orbidden/);
        assert.equal((await podObject('filter-only')).spec.nodeName, undefined);
      } finally {
        await filterOnly.stop();
      }
    });
  });
}
