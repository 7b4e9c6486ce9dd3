// The API client's requests (watches aside) are bounded: at most MAX_REQUESTS_IN_FLIGHT at once, so that a burst of
// binds reuses that many kept connections instead of opening one (a TLS handshake) per concurrent call.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeClient, MAX_REQUESTS_IN_FLIGHT } from '../../../src/cluster/kube/client.ts';
import { loadKubeConfig } from '../../../src/cluster/kubeconfig.ts';
import { FakeApiServer, writeKubeconfig } from './fake-apiserver.ts';
import { node, waitFor } from './helpers.ts';

describe('KubeClient requests in flight', () => {
  let server: FakeApiServer;
  let kubeconfig: string;
  before(async () => {
    server = new FakeApiServer();
    await server.start();
    server.add(node('node-a'));
    kubeconfig = await writeKubeconfig(server.url);
  });
  after(() => server.stop());

  const nodeReads = () => server.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes/node-a').length;

  test('at most MAX_REQUESTS_IN_FLIGHT are sent at once; the others wait their turn and are all answered', async () => {
    const client = new KubeClient(loadKubeConfig({ kubeconfig }));
    const before = nodeReads();
    const release = server.hold((r) => r.path === '/api/v1/nodes/node-a');
    const count = MAX_REQUESTS_IN_FLIGHT * 2 + 3;
    const answers = Array.from({ length: count }, () =>
      client.request<{ metadata: { name: string } }>('GET', '/api/v1/nodes/node-a'),
    );
    await waitFor('the first requests held by the server', () => nodeReads() - before === MAX_REQUESTS_IN_FLIGHT);
    // Another client's round trip: a request sent beyond the limit would have reached the server by its end.
    await new KubeClient(loadKubeConfig({ kubeconfig })).request('GET', '/api/v1/nodes');
    assert.equal(nodeReads() - before, MAX_REQUESTS_IN_FLIGHT);
    release();
    const names = (await Promise.all(answers)).map((a) => a.metadata.name);
    assert.deepEqual(names, Array(count).fill('node-a'));
    assert.equal(nodeReads() - before, count);
  });

  test('a request given up while it waits for a turn is never sent, and takes no slot from those after it', async () => {
    const client = new KubeClient(loadKubeConfig({ kubeconfig }));
    const listReads = () => server.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes').length;
    const before = { node: nodeReads(), list: listReads() };
    const release = server.hold((r) => r.path === '/api/v1/nodes/node-a');
    const held = Array.from({ length: MAX_REQUESTS_IN_FLIGHT }, () => client.request('GET', '/api/v1/nodes/node-a'));
    await waitFor('every slot held', () => nodeReads() - before.node === MAX_REQUESTS_IN_FLIGHT);
    const giveUp = new AbortController();
    const abandoned = client.request('GET', '/api/v1/nodes', { signal: giveUp.signal });
    const next = client.request<{ items: unknown[] }>('GET', '/api/v1/nodes');
    giveUp.abort(new Error('the bind was cancelled'));
    await assert.rejects(abandoned, /the bind was cancelled/);
    release();
    await Promise.all(held);
    assert.equal((await next).items.length, 1);
    assert.equal(listReads() - before.list, 1, 'only the request still wanted was sent');
    // Every slot came back: as many requests as the limit (and more) are answered.
    const again = await Promise.all(
      Array.from({ length: MAX_REQUESTS_IN_FLIGHT + 1 }, () => client.request('GET', '/api/v1/nodes')),
    );
    assert.equal(again.length, MAX_REQUESTS_IN_FLIGHT + 1);
  });
});
