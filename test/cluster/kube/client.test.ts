// KubeClient's deadline and cancellation (src/cluster/kube/client.ts): each call has its own deadline, and its
// caller's signal cancels it; the two failures are told apart.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KubeApiError, KubeClient } from '../../../src/cluster/kube/client.ts';
import { loadKubeConfig } from '../../../src/cluster/kubeconfig.ts';
import { FakeApiServer, writeKubeconfig } from './fake-apiserver.ts';

let server: FakeApiServer;
let client: KubeClient;

before(async () => {
  server = new FakeApiServer();
  await server.start();
  client = new KubeClient(loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url) }), { timeoutMs: 60_000 });
});
after(() => server.stop());

test("a call its caller cancels rejects with the caller's reason, not as a timeout", async () => {
  server.delay(5_000);
  try {
    const caller = new AbortController();
    const reason = new Error('the watch stopped');
    const call = client.request('GET', '/api/v1/namespaces/default/pods', { signal: caller.signal });
    caller.abort(reason);
    await assert.rejects(call, (err: unknown) => err === reason);
    const already = client.request('GET', '/api/v1/namespaces/default/pods', { signal: caller.signal });
    await assert.rejects(already, (err: unknown) => err === reason);
  } finally {
    server.delay(0);
  }
});

test('a call past its deadline is a Timeout naming it', async () => {
  const impatient = new KubeClient(loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url) }), {
    timeoutMs: 50,
  });
  server.delay(5_000);
  try {
    await assert.rejects(impatient.request('GET', '/api/v1/namespaces/default/pods'), (err: unknown) => {
      assert.ok(err instanceof KubeApiError);
      assert.equal(err.reason, 'Timeout');
      assert.match(err.message, /GET \/api\/v1\/namespaces\/default\/pods: no answer within 50 ms/);
      return true;
    });
  } finally {
    server.delay(0);
  }
});
