// The fake API server speaks the wire protocol the way the real one does where our client depends on it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeApiServer } from './fake-apiserver.ts';
import { node, pod, pv } from './helpers.ts';

type FakeObjectLike = { metadata: { name: string } };

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

  test('a stale resourceVersion on PUT is 409 with a Conflict Status', async () => {
    server.add(pv('pv-x'));
    const current = server.get('PersistentVolume', 'pv-x')!;
    server.update({ ...current, metadata: { ...current.metadata, labels: { a: 'b' } } });
    const res = await json('/api/v1/persistentvolumes/pv-x', {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(current),
    });
    assert.equal(res.status, 409);
    assert.equal(res.body.kind, 'Status');
    assert.equal(res.body.reason, 'Conflict');
    assert.equal(res.body.code, 409);
    assert.match(String(res.body.message), /the object has been modified/);
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

  test('DELETE emits DELETED with a new resourceVersion and GET answers 404 afterwards', async () => {
    server.add(node('gone'));
    const from = server.resourceVersion;
    const del = await json('/api/v1/nodes/gone', { method: 'DELETE' });
    assert.equal(del.status, 200);
    const lines = await watchLines(`/api/v1/nodes?watch=true&resourceVersion=${from}`, (l) => l.length > 0);
    assert.equal(lines[0].type, 'DELETED');
    assert.equal((lines[0].object.metadata as { resourceVersion: string }).resourceVersion, String(from + 1));
    const get = await json('/api/v1/nodes/gone');
    assert.equal(get.status, 404);
    assert.equal(get.body.reason, 'NotFound');
  });

  const patchPod = (name: string, sub: string, body: unknown, type: string, query = '') =>
    json(`/api/v1/namespaces/default/pods/${name}${sub}${query}`, {
      method: 'PATCH',
      headers: { 'content-type': type },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  test('a strategic merge patch of pod status merges conditions by type and keeps $setElementOrder', async () => {
    server.add({ ...pod('smp'), status: { conditions: [{ type: 'Ready', status: 'False', reason: 'r' }] } });
    const res = await patchPod(
      'smp',
      '/status',
      {
        status: {
          '$setElementOrder/conditions': [{ type: 'PodScheduled' }, { type: 'Ready' }],
          conditions: [{ type: 'PodScheduled', status: 'False', message: '0/3 nodes are available' }],
        },
      },
      'application/strategic-merge-patch+json',
    );
    assert.equal(res.status, 200);
    const conditions = (res.body.status as { conditions: { type: string; reason?: string }[] }).conditions;
    assert.deepEqual(
      conditions.map((c) => c.type),
      ['PodScheduled', 'Ready'],
    );
    assert.equal(conditions[1].reason, 'r', 'the Ready condition keeps its fields');
    const merge = await patchPod(
      'smp',
      '/status',
      { status: { conditions: [{ type: 'X' }] } },
      'application/merge-patch+json',
    );
    assert.deepEqual(
      (merge.body.status as { conditions: unknown[] }).conditions,
      [{ type: 'X' }],
      'a JSON merge patch replaces lists',
    );
    const bad = await patchPod('smp', '', { spec: { $retainKeys: ['x'] } }, 'application/strategic-merge-patch+json');
    assert.equal(bad.status, 400);
  });

  test('the status subresource changes only status, and the object itself never changes status', async () => {
    server.add({ ...pod('sub'), status: { phase: 'Pending' } });
    const viaStatus = await patchPod(
      'sub',
      '/status',
      { spec: { nodeName: 'n9' }, status: { nominatedNodeName: 'n1' } },
      'application/strategic-merge-patch+json',
    );
    assert.equal((viaStatus.body.spec as { nodeName?: string }).nodeName, undefined);
    assert.equal((viaStatus.body.status as { nominatedNodeName?: string }).nominatedNodeName, 'n1');
    const viaObject = await patchPod(
      'sub',
      '',
      { metadata: { labels: { a: 'b' } }, status: { phase: 'Running' } },
      'application/merge-patch+json',
    );
    assert.equal((viaObject.body.status as { phase: string }).phase, 'Pending');
    assert.equal((viaObject.body.metadata as { labels: Record<string, string> }).labels.a, 'b');
    const nulled = await patchPod(
      'sub',
      '/status',
      { status: { nominatedNodeName: null } },
      'application/strategic-merge-patch+json',
    );
    assert.equal((nulled.body.status as { nominatedNodeName?: string }).nominatedNodeName, undefined);
  });

  test('server-side apply on pods/status adds a condition and needs a field manager', async () => {
    server.add({ ...pod('victim'), status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } });
    const applied = {
      kind: 'Pod',
      apiVersion: 'v1',
      metadata: { name: 'victim', namespace: 'default' },
      status: { conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'PreemptionByScheduler' }] },
    };
    const noManager = await patchPod('victim', '/status', applied, 'application/apply-patch+yaml', '?force=true');
    assert.equal(noManager.status, 422);
    const yamlBody =
      'kind: Pod\napiVersion: v1\nmetadata: {name: victim, namespace: default}\nstatus:\n  conditions:\n  - {type: DisruptionTarget, status: "True"}\n';
    const res = await patchPod(
      'victim',
      '/status',
      yamlBody,
      'application/apply-patch+yaml',
      '?fieldManager=kube-scheduler&force=true',
    );
    assert.equal(res.status, 200);
    assert.deepEqual(
      (res.body.status as { conditions: { type: string }[] }).conditions.map((c) => c.type),
      ['Ready', 'DisruptionTarget'],
    );
    assert.equal((res.body.status as { phase: string }).phase, 'Running');
  });

  test('a watch-list sends the state as ADDED events, then a bookmark marking their end', async () => {
    server.add(node('wl1'));
    const refused = await fetch(`${server.url}/api/v1/nodes?watch=true&sendInitialEvents=true`);
    assert.equal(refused.status, 422);
    await refused.body?.cancel();
    const lines = await watchLines(
      '/api/v1/nodes?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
      (l) => l.some((e) => e.type === 'BOOKMARK'),
    );
    const end = lines.findIndex((e) => e.type === 'BOOKMARK');
    const names = lines.slice(0, end).map((e) => (e.object.metadata as { name: string }).name);
    assert.ok(names.includes('wl1'));
    assert.ok(lines.slice(0, end).every((e) => e.type === 'ADDED'));
    const meta = lines[end].object.metadata as { annotations?: Record<string, string>; resourceVersion: string };
    assert.equal(meta.annotations?.['k8s.io/initial-events-end'], 'true');
    assert.equal(meta.resourceVersion, String(server.resourceVersion));
  });

  test('a field-selected watch sees a pod enter as ADDED and leave as DELETED; unknown fields are 400', async () => {
    const selector = encodeURIComponent('status.phase!=Succeeded,status.phase!=Failed');
    const unknown = await json('/api/v1/pods?fieldSelector=spec.color%3Dred');
    assert.equal(unknown.status, 400);
    assert.match(String(unknown.body.message), /field label not supported: spec.color/);
    server.add({ ...pod('fs'), status: { phase: 'Succeeded' } });
    const listed = await json(`/api/v1/pods?fieldSelector=${selector}`);
    assert.ok(!(listed.body.items as FakeObjectLike[]).some((p) => p.metadata.name === 'fs'));
    const from = server.resourceVersion;
    const current = server.get('Pod', 'fs', 'default')!;
    server.update({ ...current, status: { phase: 'Running' } });
    server.update({ ...server.get('Pod', 'fs', 'default')!, status: { phase: 'Failed' } });
    const lines = await watchLines(
      `/api/v1/pods?watch=true&resourceVersion=${from}&fieldSelector=${selector}`,
      (l) => l.length >= 2,
    );
    assert.deepEqual(
      lines.map((e) => e.type),
      ['ADDED', 'DELETED'],
    );
  });

  test('DELETE honours a UID precondition; discovery lists the served resources', async () => {
    server.add(pod('pre'));
    const wrong = await json('/api/v1/namespaces/default/pods/pre', {
      method: 'DELETE',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ preconditions: { uid: 'not-it' } }),
    });
    assert.equal(wrong.status, 409);
    assert.ok(server.get('Pod', 'pre', 'default'));
    const events = await json('/apis/events.k8s.io/v1');
    assert.equal(events.body.kind, 'APIResourceList');
    assert.ok((events.body.resources as { name: string }[]).some((r) => r.name === 'events'));
    const created = await json('/apis/events.k8s.io/v1/namespaces/default/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'e1' }, eventTime: '2026-11-25T20:31:33.039716Z', reason: 'Scheduled' }),
    });
    assert.equal(created.status, 201);
    assert.equal(created.body.apiVersion, 'events.k8s.io/v1');
    assert.equal(created.body.eventTime, '2026-11-25T20:31:33.039716Z', 'MicroTime keeps its microseconds');
  });
});
