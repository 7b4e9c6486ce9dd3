// End to end: a role written by hand for an older version, without the kinds only explain and simulate read
// (here Services and ReplicaSets), must not stop scheduling. The real CLI against the fake API server, which refuses
// them with RBAC's 403 until the test grants them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { node, pod, waitFor, workloadObjects } from '../cluster/kube/helpers.ts';
import { callExtender, type ExtenderProcess, startExtender } from './extender-process.ts';
import { FakeApiServer, writeKubeconfig } from './fake-apiserver.ts';

let server: FakeApiServer;
let extender: ExtenderProcess;

const SPREADING = 'default topology spreading not fully modelled';
const FORBIDDEN_NOTES = [
  `${SPREADING}: services could not be listed (403 Forbidden)`,
  `${SPREADING}: replicasets could not be listed (403 Forbidden)`,
];

const call = <T>(method: 'GET' | 'POST', path: string, body?: unknown) => callExtender<T>(extender, method, path, body);

const readyz = () =>
  call<{ ready: boolean; notSynced: string[]; stale: string[]; unavailable: string[] }>('GET', '/readyz');

async function notes(route: 'explain' | 'simulate'): Promise<string[]> {
  const body =
    route === 'explain'
      ? { namespace: 'default', name: 'web-1' }
      : { namespace: 'default', name: 'web-1', replicas: 2 };
  const r = await call<{ notes?: string[] }>('POST', `/api/v1/${route}`, body);
  assert.equal(r.status, 200);
  return r.body.notes ?? [];
}

const warnings = (plural: string) =>
  extender.logs.filter((l) => l.level === 40 && l.msg.startsWith(`cannot list ${plural} (403 Forbidden)`));

before(async () => {
  server = new FakeApiServer({ bookmarkIntervalMs: 100 });
  await server.start();
  server.add(node('node-a'), node('node-b'), ...workloadObjects());
  const web = pod('web-1');
  server.add({ ...web, metadata: { ...web.metadata, labels: { app: 'web' } } });
  server.forbid('services', 'replicasets');
  extender = await startExtender(await writeKubeconfig(server.url));
});

after(async () => {
  const code = await extender?.stop();
  await server?.stop();
  assert.equal(code, 0, 'the extender exits cleanly on SIGTERM');
  assert.deepEqual(
    extender.logs.filter((l) => l.level >= 50),
    [],
    'a forbidden analysis-only kind is a warning, not an error',
  );
});

describe('kinds only explain and simulate read', () => {
  test('forbidden Services and ReplicaSets: ready anyway, filter answers, one warning per kind says what is lost', async () => {
    const { body } = await waitFor('ready', async () => {
      const r = await readyz();
      return r.status === 200 ? r : undefined;
    });
    assert.deepEqual(body.notSynced, []);
    assert.deepEqual(body.unavailable, ['Service', 'ReplicaSet']);
    const filtered = await call<{ NodeNames: string[]; Error: string }>('POST', '/scheduler/filter', {
      Pod: server.get('Pod', 'web-1', 'default'),
      Nodes: null,
      NodeNames: ['node-a', 'node-b'],
    });
    assert.equal(filtered.status, 200);
    assert.deepEqual(filtered.body.NodeNames, ['node-a', 'node-b']);
    for (const plural of ['services', 'replicasets']) {
      const [warning, ...again] = warnings(plural);
      assert.ok(warning, `a warning about ${plural}`);
      assert.deepEqual(again, [], 'said once, not at every retry');
      assert.match(warning.msg, new RegExp(`${SPREADING} in explain and simulate; grant list and watch on ${plural}`));
    }
    const metrics = await call<string>('GET', '/metrics');
    assert.match(metrics.body, /topology_extender_analysis_kind_unavailable\{kind="Service"\} 1/);
    assert.match(metrics.body, /topology_extender_analysis_kind_unavailable\{kind="StatefulSet"\} 0/);
  });

  test('explain and simulate say which kind they could not model', async () => {
    await waitFor('ready', async () => (await readyz()).status === 200);
    assert.deepEqual(await notes('explain'), FORBIDDEN_NOTES);
    assert.deepEqual(await notes('simulate'), FORBIDDEN_NOTES);
  });

  test('once the role grants them, they are listed and the notes go', async () => {
    server.allow('services', 'replicasets');
    await waitFor('both listed', async () => (await readyz()).body.unavailable.length === 0, 60_000);
    // The log comes through the extender's stdout: it may be read after /readyz answered.
    await waitFor('the recovery logged', async () =>
      extender.logs.some((l) => l.msg === 'services listed after failing: explain and simulate use them again'),
    );
    assert.deepEqual(await notes('explain'), []);
    assert.deepEqual(await notes('simulate'), []);
    const metrics = await call<string>('GET', '/metrics');
    assert.match(metrics.body, /topology_extender_analysis_kind_unavailable\{kind="Service"\} 0/);
  });

  test('access revoked after the list: the kind is unavailable again, the notes say it is not followed, filter answers', async () => {
    server.forbid('services');
    server.dropWatches(); // every kind watches again; the Service watch now gets 403
    const { body } = await waitFor('Service unavailable again', async () => {
      const r = await readyz();
      return r.body.unavailable.includes('Service') ? r : undefined;
    });
    assert.equal(body.ready, true, 'still ready: the verbs never read Services');
    assert.deepEqual(body.unavailable, ['Service']);
    const followed = `${SPREADING}: services are not followed: the watch is failing`;
    assert.deepEqual(await notes('explain'), [followed]);
    assert.deepEqual(await notes('simulate'), [followed]);
    const filtered = await call<{ NodeNames: string[] }>('POST', '/scheduler/filter', {
      Pod: server.get('Pod', 'web-1', 'default'),
      Nodes: null,
      NodeNames: ['node-a', 'node-b'],
    });
    assert.equal(filtered.status, 200);
    assert.deepEqual(filtered.body.NodeNames, ['node-a', 'node-b']);

    server.allow('services');
    await waitFor('Service followed again', async () => (await readyz()).body.unavailable.length === 0, 60_000);
    assert.deepEqual(await notes('explain'), []);
  });
});
