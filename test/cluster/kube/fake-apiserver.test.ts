// The fake API server speaks the wire protocol the way the real one does where the extender's client depends on it,
// and refuses what it does not serve.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeApiServer } from './fake-apiserver.ts';
import { node, pod, pv } from './helpers.ts';

let server: FakeApiServer;

before(async () => {
  server = new FakeApiServer({ bookmarkIntervalMs: 20, historyLimit: 5 });
  await server.start();
});
after(() => server.stop());

async function json(path: string, init: RequestInit = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(server.url + path, init);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Opens a watch and collects its lines until `until` says stop (or the stream ends). */
async function watchLines(
  path: string,
  until: (lines: { type: string; object: Record<string, unknown> }[]) => boolean,
  onOpen?: () => void,
): Promise<{ type: string; object: Record<string, unknown> }[]> {
  const controller = new AbortController();
  const res = await fetch(server.url + path, { signal: controller.signal });
  assert.equal(res.status, 200);
  onOpen?.();
  const lines: { type: string; object: Record<string, unknown> }[] = [];
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl = buffered.indexOf('\n');
      while (nl >= 0) {
        lines.push(JSON.parse(buffered.slice(0, nl)));
        buffered = buffered.slice(nl + 1);
        nl = buffered.indexOf('\n');
      }
      if (until(lines)) break;
    }
  } finally {
    controller.abort();
  }
  return lines;
}

describe('fake API server', () => {
  test('lists page by page with a continue token and one resourceVersion', async () => {
    server.add(node('n1'), node('n2'), node('n3'));
    const first = await json('/api/v1/nodes?limit=2');
    const meta = first.body.metadata as { continue?: string; resourceVersion: string; remainingItemCount?: number };
    assert.equal((first.body.items as unknown[]).length, 2);
    assert.equal(first.body.kind, 'NodeList');
    assert.equal(meta.remainingItemCount, 1);
    server.add(node('n4')); // a change after the first page does not show in the rest of this list
    const second = await json(`/api/v1/nodes?limit=2&continue=${meta.continue}`);
    const meta2 = second.body.metadata as { continue?: string; resourceVersion: string };
    assert.equal((second.body.items as unknown[]).length, 1);
    assert.equal(meta2.continue, undefined);
    assert.equal(meta2.resourceVersion, meta.resourceVersion);
  });

  test('merge patch needs its content type and honours a resourceVersion in the patch', async () => {
    server.add(pv('pv-y'));
    const rv = server.get('PersistentVolume', 'pv-y')!.metadata.resourceVersion;
    const patch = (body: unknown, type = 'application/merge-patch+json') =>
      json('/api/v1/persistentvolumes/pv-y', {
        method: 'PATCH',
        headers: { 'content-type': type },
        body: JSON.stringify(body),
      });
    assert.equal((await patch({ metadata: { labels: { x: '1' } } }, 'application/json-patch+json')).status, 415);
    const ok = await patch({ metadata: { resourceVersion: rv, labels: { x: '1' } }, spec: { claimRef: null } });
    assert.equal(ok.status, 200);
    assert.deepEqual((ok.body.metadata as { labels: unknown }).labels, { x: '1' });
    assert.equal((await patch({ metadata: { resourceVersion: rv } })).status, 409);
  });

  test('binding sets the node once; a second binding or a wrong UID is 409', async () => {
    server.add(pod('b1'));
    const uid = server.get('Pod', 'b1', 'default')!.metadata.uid;
    const bindTo = (nodeName: string, u = uid) =>
      json('/api/v1/namespaces/default/pods/b1/binding', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name: 'b1', uid: u }, target: { kind: 'Node', name: nodeName } }),
      });
    assert.equal((await bindTo('n1', 'wrong')).status, 409);
    assert.equal((await bindTo('n1')).status, 201);
    const again = await bindTo('n2');
    assert.equal(again.status, 409);
    assert.match(String(again.body.message), /already assigned to node "n1"/);
    assert.deepEqual(
      server.writes.filter((w) => w.path.endsWith('/b1/binding')).map((w) => w.status),
      [409, 201, 409],
    );
  });

  test('a watch replays from its resourceVersion and sends bookmarks only when asked', async () => {
    const from = server.resourceVersion;
    server.add(node('w1'));
    const lines = await watchLines(`/api/v1/nodes?watch=true&resourceVersion=${from}&allowWatchBookmarks=true`, (l) =>
      l.some((e) => e.type === 'BOOKMARK'),
    );
    assert.equal(lines[0].type, 'ADDED');
    assert.equal((lines[0].object.metadata as { name: string }).name, 'w1');
    const plain = await watchLines(
      `/api/v1/nodes?watch=true&resourceVersion=${server.resourceVersion}`,
      (l) => l.length > 0,
      () => server.add(node('w2')),
    );
    assert.equal(plain.length, 1);
    assert.ok(plain.every((e) => e.type !== 'BOOKMARK'));
  });

  test('a watch from a compacted resourceVersion gets a 410 Expired ERROR event', async () => {
    const old = server.resourceVersion;
    for (let i = 0; i < 6; i++) server.add(node(`c${i}`)); // history holds 5 events
    const lines = await watchLines(`/api/v1/nodes?watch=true&resourceVersion=${old}`, () => false);
    assert.equal(lines.length, 1);
    assert.equal(lines[0].type, 'ERROR');
    assert.equal(lines[0].object.code, 410);
    assert.equal(lines[0].object.reason, 'Expired');
  });

  test('a removed object is DELETED with a new resourceVersion and GET answers 404 afterwards', async () => {
    server.add(node('gone'));
    const from = server.resourceVersion;
    server.remove('Node', 'gone');
    const lines = await watchLines(`/api/v1/nodes?watch=true&resourceVersion=${from}`, (l) => l.length > 0);
    assert.equal(lines[0].type, 'DELETED');
    assert.equal((lines[0].object.metadata as { resourceVersion: string }).resourceVersion, String(from + 1));
    const get = await json('/api/v1/nodes/gone');
    assert.equal(get.status, 404);
    assert.equal(get.body.reason, 'NotFound');
  });

  test('what the extender never sends is refused, not ignored', async () => {
    const selected = await json('/api/v1/pods?fieldSelector=spec.nodeName%3Dn1');
    assert.equal(selected.status, 400);
    assert.match(String(selected.body.message), /does not serve fieldSelector/);
    const watchList = await fetch(
      `${server.url}/api/v1/nodes?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
    );
    assert.equal(watchList.status, 400);
    await watchList.body?.cancel();
    server.add(pod('put'));
    const put = await json('/api/v1/namespaces/default/pods/put', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(server.get('Pod', 'put', 'default')),
    });
    assert.equal(put.status, 405);
    assert.equal((await json('/api/v1/namespaces/default/pods/put/status')).status, 404);
  });
});
