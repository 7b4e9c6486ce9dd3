// End to end: nominations follow the pod watch of the real CLI against the fake API server. A pod nominated through a
// watch update holds its PV against an equal-priority pod and yields it to a higher-priority one; after a restart the
// nominations come back from status.nominatedNodeName.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { node, pod, pv, pvc, storageClass, waitFor } from '../cluster/kube/helpers.ts';
import { type ExtenderProcess, startExtender } from './extender-process.ts';
import { FakeApiServer, type FakeObject, writeKubeconfig } from './fake-apiserver.ts';

let server: FakeApiServer;
let extender: ExtenderProcess;
let kubeconfig: string;

function withPriority(p: FakeObject, priority: number): FakeObject {
  return { ...p, spec: { ...(p.spec as object), priority } };
}

async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${extender.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.equal(res.status, 200, `${method} ${path}`);
  return (await res.json()) as T;
}

async function fits(name: string): Promise<boolean> {
  const Pod = server.get('Pod', name, 'default');
  const body = await call<{ NodeNames: string[] }>('POST', '/scheduler/filter', {
    Pod,
    Nodes: null,
    NodeNames: ['node-n'],
  });
  return body.NodeNames.includes('node-n');
}

const nominated = async () =>
  (
    await call<{ node: string; pods: { name: string; persistentVolumes: string[] }[] }[]>('GET', '/api/v1/nominations')
  ).flatMap((n) => n.pods.map((p) => `${n.node}/${p.name}:${p.persistentVolumes.join(',')}`));

async function ready(): Promise<void> {
  await waitFor('extender ready', async () => (await fetch(`${extender.url}/readyz`)).status === 200);
}

before(async () => {
  server = new FakeApiServer({ bookmarkIntervalMs: 100 });
  await server.start();
  server.add(node('node-n'), storageClass('local'));
  // One local PV on the node: whoever is nominated there first holds it.
  server.add(pv('pv-n', { node: 'node-n' }));
  for (const [name, priority] of [
    ['waiting', 100],
    ['equal', 100],
    ['higher', 1000],
  ] as const) {
    server.add(pvc(`${name}-data`), withPriority(pod(name, { claims: [`${name}-data`] }), priority));
  }
  kubeconfig = await writeKubeconfig(server.url);
  extender = await startExtender(kubeconfig);
  await ready();
});

after(async () => {
  const code = await extender?.stop();
  await server?.stop();
  assert.equal(code, 0, 'the extender exits cleanly on SIGTERM');
});

test('a pod nominated through a watch update holds its PV against an equal-priority pod, yields it to a higher one, and is nominated again after a restart', async () => {
  assert.equal(await fits('equal'), true, 'before any nomination the PV is free');
  const waiting = server.get('Pod', 'waiting', 'default')!;
  server.update({ ...waiting, status: { ...(waiting.status as object), nominatedNodeName: 'node-n' } });
  await waitFor('the nomination arrives through the watch', async () => (await nominated()).length === 1);
  assert.deepEqual(await nominated(), ['node-n/waiting:pv-n']);
  assert.equal(await fits('equal'), false, 'an equal-priority pod may not take the held PV');
  assert.equal(await fits('higher'), true, 'a higher-priority pod may');

  assert.equal(await extender.stop(), 0);
  extender = await startExtender(kubeconfig);
  await ready();
  assert.deepEqual(await nominated(), ['node-n/waiting:pv-n'], 'rebuilt from status.nominatedNodeName');
  assert.equal(await fits('equal'), false);
});
