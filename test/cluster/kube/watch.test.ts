// The watch stream (src/cluster/kube/watch.ts): events split from the answer as they arrive, an inactivity timeout
// that ends a stream the API server stopped feeding, and a refused watch reported with its status code.
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { KubeClient } from '../../../src/cluster/kube/client.ts';
import { type WatchEvent, watch } from '../../../src/cluster/kube/watch.ts';
import { loadKubeConfig } from '../../../src/cluster/kubeconfig.ts';
import { FakeApiServer, writeKubeconfig } from './fake-apiserver.ts';

let server: FakeApiServer;
let client: KubeClient;
before(async () => {
  server = new FakeApiServer();
  await server.start();
  client = new KubeClient(loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url) }));
});
after(() => server.stop());

function open(path: string, query: Record<string, string>, inactivityMs: number) {
  const events: WatchEvent[] = [];
  const { promise: ended, resolve } = Promise.withResolvers<Error | null>();
  const controller = watch(client, path, { query, onEvent: (e) => events.push(e), onDone: resolve, inactivityMs });
  return { events, ended, controller };
}

it('a watch silent for longer than its inactivity timeout ends with a TimeoutError; a longer one stays open', async () => {
  // No allowWatchBookmarks: the fake API server sends nothing on these streams.
  const long = open('/api/v1/nodes', {}, 60_000);
  const short = open('/api/v1/nodes', {}, 200);
  const err = await short.ended;
  assert.equal(err?.name, 'TimeoutError');
  const state = await Promise.race([long.ended.then(() => 'ended'), Promise.resolve('open')]);
  assert.equal(state, 'open', 'the watch on the 60 s timeout is still open');
  (await long.controller).abort();
  await long.ended;
});

it('delivers each event written to the stream, in order, objects whole', async () => {
  const w = open('/api/v1/nodes', {}, 60_000);
  await w.controller;
  const names = () => w.events.map((e) => `${e.type} ${(e.object as { metadata: { name: string } }).metadata.name}`);
  server.add(...['a', 'b', 'c'].map((n) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: `node-${n}` } })));
  server.remove('Node', 'node-b');
  while (w.events.length < 4) await new Promise((r) => setImmediate(r));
  assert.deepEqual(names(), ['ADDED node-a', 'ADDED node-b', 'ADDED node-c', 'DELETED node-b']);
  (await w.controller).abort();
  assert.equal((await w.ended)?.name, 'AbortError', 'ended by its caller, not by the server');
});

it('a stream the server ends is done without an error', async () => {
  const w = open('/api/v1/nodes', {}, 60_000);
  await w.controller;
  server.endWatches();
  assert.equal(await w.ended, null);
});

it("a refused watch ends with its status code and the API server's message, so 410 Gone can be told apart", async () => {
  server.failNext('/api/v1/nodes', 1, 410, 'GET', true);
  const w = open('/api/v1/nodes', {}, 60_000);
  const err = (await w.ended) as Error & { statusCode?: number };
  assert.equal(err.statusCode, 410);
  assert.equal(err.name, 'WatchRefused');
  assert.deepEqual(w.events, []);
});
