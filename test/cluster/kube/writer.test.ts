// The live writer against the fake API server: Binding with UID precondition, volume writes with resourceVersion
// preconditions, and the rules for 409 and 5xx.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import pkg from '../../../package.json' with { type: 'json' };
import { KubeWriter } from '../../../src/cluster/kube/writer.ts';
import { loadKubeConfig } from '../../../src/cluster/kubeconfig.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../../src/cluster/types.ts';
import { WriteError } from '../../../src/cluster/writer.ts';
import { type RecordingLogger, recordingLogger } from '../../helpers/log.ts';
import { FakeApiServer, type FakeObject, writeKubeconfig } from './fake-apiserver.ts';
import { pod, pv, pvc } from './helpers.ts';

let server: FakeApiServer;
let writer: KubeWriter;
let logger: RecordingLogger;

before(async () => {
  server = new FakeApiServer();
  await server.start();
  logger = recordingLogger();
  writer = new KubeWriter({
    kubeConfig: loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url) }),
    logger,
    backoff: { initialMs: 5, maxMs: 20 },
  });
});
after(() => server.stop());

beforeEach(() => {
  for (const kind of ['Pod', 'PersistentVolume', 'PersistentVolumeClaim']) {
    for (const o of server.list(kind)) server.remove(kind, o.metadata.name, o.metadata.namespace);
  }
  server.writes.length = 0;
  server.clearFailures();
  server.onWrite = undefined;
  logger.records.length = 0;
});

const podRef = (o: FakeObject) => ({ namespace: o.metadata.namespace!, name: o.metadata.name, uid: o.metadata.uid! });

async function rejects(promise: Promise<unknown>): Promise<WriteError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof WriteError, `expected a WriteError, got ${err}`);
    return err;
  }
  assert.fail('expected the write to fail');
}

describe('KubeWriter.bindPod', () => {
  test('creates the Binding with the pod UID as precondition and the node as target', async () => {
    server.add(pod('web'));
    const p = server.get('Pod', 'web', 'default')!;
    await writer.bindPod(podRef(p), 'node-a');
    assert.equal((server.get('Pod', 'web', 'default')!.spec as { nodeName?: string }).nodeName, 'node-a');
    assert.equal(server.requests.at(-1)?.authorization, 'Bearer fake-token');
    // Attributable in audit logs: every request of the bind, reads and writes, names the extender.
    assert.ok(server.requests.every((r) => r.userAgent === `topology-extender/${pkg.version}`));
    const [write] = server.writes;
    assert.equal(write.method, 'POST');
    assert.equal(write.path, '/api/v1/namespaces/default/pods/web/binding');
    assert.deepEqual(write.body, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'web', namespace: 'default', uid: p.metadata.uid },
      target: { apiVersion: 'v1', kind: 'Node', name: 'node-a' },
    });
  });

  test('a repeated bind of a bound pod is the 409 as it is, certain: the bind reads the pod, not the writer', async () => {
    server.add(pod('web'));
    const ref = podRef(server.get('Pod', 'web', 'default')!);
    await writer.bindPod(ref, 'node-a');
    const err = await rejects(writer.bindPod(ref, 'node-a'));
    assert.equal(err.code, 409);
    assert.equal(err.uncertain, false);
    assert.deepEqual(
      server.writes.map((w) => w.status),
      [201, 409],
    );
  });

  test('a Binding whose reply was lost and whose retries get 5xx fails uncertain: it may have been applied', async () => {
    server.add(pod('web'));
    server.loseReplyNext('/pods/web/binding', 1, 'POST', 'reset');
    server.failNext('/pods/web/binding', 10, 500, 'POST');
    const err = await rejects(writer.bindPod(podRef(server.get('Pod', 'web', 'default')!), 'node-a'));
    assert.equal(err.code, 500);
    assert.equal(err.uncertain, true);
    assert.equal((server.get('Pod', 'web', 'default')!.spec as { nodeName?: string }).nodeName, 'node-a');
  });

  test('a bind to another node than the one the pod is on is a Conflict that says where the pod is', async () => {
    server.add(pod('web', { nodeName: 'node-b' }));
    const err = await rejects(writer.bindPod(podRef(server.get('Pod', 'web', 'default')!), 'node-a'));
    assert.equal(err.code, 409);
    assert.equal(err.reason, 'Conflict');
    assert.match(err.message, /already assigned to node "node-b"/);
  });

  test('a stale UID (pod deleted and created again) is a Conflict', async () => {
    server.add(pod('web'));
    const ref = { ...podRef(server.get('Pod', 'web', 'default')!), uid: 'old-uid' };
    const err = await rejects(writer.bindPod(ref, 'node-a'));
    assert.equal(err.code, 409);
    assert.match(err.message, /Precondition failed: UID in precondition: old-uid/);
  });

  test('5xx on the Binding is retried', async () => {
    server.add(pod('web'));
    server.failNext('/pods/web/binding', 2, 503);
    await writer.bindPod(podRef(server.get('Pod', 'web', 'default')!), 'node-a');
    assert.deepEqual(
      server.writes.map((w) => w.status),
      [503, 503, 201],
    );
    assert.equal(logger.at('warn').length, 2);
  });

  test('persistent 5xx gives up after the retries with the status and message', async () => {
    server.add(pod('web'));
    server.failNext('/pods/web/binding', 10, 500);
    const err = await rejects(writer.bindPod(podRef(server.get('Pod', 'web', 'default')!), 'node-a'));
    assert.equal(err.code, 500);
    assert.equal(err.reason, 'InternalError');
    assert.equal(err.uncertain, true, 'a 5xx may come after the write was applied');
    assert.match(err.message, /binding pod "default\/web" to node "node-a": 500 InternalError: injected failure/);
    assert.equal(server.writes.length, 4); // 1 + 3 retries
  });

  test('a missing pod is NotFound', async () => {
    const err = await rejects(writer.bindPod({ namespace: 'default', name: 'ghost', uid: 'u' }, 'node-a'));
    assert.equal(err.code, 404);
    assert.equal(err.reason, 'NotFound');
  });
});

describe('KubeWriter volumes', () => {
  const readPv = () => server.get('PersistentVolume', 'pv-1') as unknown as PersistentVolume;
  const readPvc = () => server.get('PersistentVolumeClaim', 'claim-1', 'default') as unknown as PersistentVolumeClaim;

  test('binds a PV to a claim with the resourceVersion precondition and keeps what the store trims (finalizers)', async () => {
    server.add(pv('pv-1'), pvc('claim-1'));
    const current = readPv();
    const claim = readPvc();
    const desired: PersistentVolume = {
      metadata: {
        ...current.metadata,
        annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' },
      },
      spec: {
        ...current.spec,
        claimRef: {
          kind: 'PersistentVolumeClaim',
          apiVersion: 'v1',
          namespace: 'default',
          name: 'claim-1',
          uid: claim.metadata.uid,
          resourceVersion: claim.metadata.resourceVersion,
        },
      },
    };
    delete (desired.metadata as { finalizers?: string[] }).finalizers; // as the store holds it
    const stored = await writer.updatePersistentVolume(desired);
    assert.notEqual(stored.metadata.resourceVersion, current.metadata.resourceVersion);
    assert.equal(stored.spec.claimRef?.name, 'claim-1');
    const live = readPv() as PersistentVolume & { metadata: { finalizers?: string[] } };
    assert.deepEqual(live.metadata.finalizers, ['kubernetes.io/pv-protection']);
    assert.equal(live.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
    const [write] = server.writes;
    assert.equal(write.path, '/api/v1/persistentvolumes/pv-1');
    assert.equal(write.contentType, 'application/merge-patch+json');
    assert.equal(
      (write.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
      current.metadata.resourceVersion,
    );
  });

  test('annotates a PVC with the selected node', async () => {
    server.add(pvc('claim-1'));
    const current = readPvc();
    const stored = await writer.updatePersistentVolumeClaim({
      ...current,
      metadata: { ...current.metadata, annotations: { 'volume.kubernetes.io/selected-node': 'node-a' } },
    });
    assert.equal(stored.metadata.annotations?.['volume.kubernetes.io/selected-node'], 'node-a');
    assert.equal(readPvc().metadata.annotations?.['volume.kubernetes.io/selected-node'], 'node-a');
    assert.equal(server.writes[0].path, '/api/v1/namespaces/default/persistentvolumeclaims/claim-1');
  });

  test('a stale resourceVersion is a Conflict and is not retried', async () => {
    server.add(pv('pv-1'));
    const old = readPv();
    server.update({ ...(old as unknown as FakeObject), metadata: { ...old.metadata, labels: { changed: 'yes' } } });
    const err = await rejects(writer.updatePersistentVolume(old));
    assert.equal(err.code, 409);
    assert.equal(err.reason, 'Conflict');
    assert.match(
      err.message,
      /updating PersistentVolume "pv-1" at resourceVersion \d+: 409 Conflict: Operation cannot be fulfilled/,
    );
    assert.equal(server.writes.length, 1);
  });

  test('a forced 409 is a Conflict too', async () => {
    server.add(pvc('claim-1'));
    server.conflictNextPatch('/api/v1/namespaces/default/persistentvolumeclaims/claim-1');
    const err = await rejects(writer.updatePersistentVolumeClaim(readPvc()));
    assert.equal(err.code, 409);
    assert.equal(server.writes.length, 1);
  });

  test('5xx then success is retried; a retry that meets its own earlier write counts as success', async () => {
    server.add(pvc('claim-1'));
    server.failNext('/persistentvolumeclaims/claim-1', 1, 503);
    const current = readPvc();
    const desired = {
      ...current,
      metadata: { ...current.metadata, annotations: { 'volume.kubernetes.io/selected-node': 'node-a' } },
    };
    await writer.updatePersistentVolumeClaim(desired);
    assert.deepEqual(
      server.writes.map((w) => w.status),
      [503, 200],
    );
    // The earlier write landed (as if its answer was lost); the retry's 409 is recognised by reading the object.
    server.writes.length = 0;
    const stored = readPvc();
    const again = { ...desired, metadata: { ...desired.metadata, resourceVersion: current.metadata.resourceVersion } };
    server.failNext('/persistentvolumeclaims/claim-1', 1, 500, 'PATCH');
    const out = await writer.updatePersistentVolumeClaim(again);
    assert.equal(out.metadata.resourceVersion, stored.metadata.resourceVersion);
  });

  test('a write whose reply was lost is read back and not sent again', async () => {
    server.add(pvc('claim-1'));
    const current = readPvc();
    server.loseReplyNext('/persistentvolumeclaims/claim-1', 1, 'PATCH', 'reset');
    const out = await writer.updatePersistentVolumeClaim({
      ...current,
      metadata: { ...current.metadata, annotations: { 'volume.kubernetes.io/selected-node': 'node-a' } },
    });
    assert.equal(out.metadata.resourceVersion, readPvc().metadata.resourceVersion);
    assert.deepEqual(
      server.writes.map((w) => [w.status, w.lost]),
      [[200, 'reset']],
    );
  });

  test('a write of unknown outcome that another writer changed meanwhile is a Conflict, not sent again', async () => {
    server.add(pvc('claim-1'));
    const current = readPvc();
    server.failNext('/persistentvolumeclaims/claim-1', 1, 500, 'PATCH');
    server.onWrite = () => {
      server.onWrite = undefined;
      server.update({
        ...(readPvc() as unknown as FakeObject),
        metadata: { ...readPvc().metadata, labels: { x: 'y' } },
      });
    };
    const err = await rejects(
      writer.updatePersistentVolumeClaim({
        ...current,
        metadata: { ...current.metadata, annotations: { 'volume.kubernetes.io/selected-node': 'node-a' } },
      }),
    );
    assert.equal(err.code, 409);
    assert.equal(err.uncertain, false);
    assert.deepEqual(
      server.writes.map((w) => w.status),
      [500],
    );
  });

  test('a write of unknown outcome that cannot be read back fails uncertain', async () => {
    server.add(pvc('claim-1'));
    const current = readPvc();
    server.loseReplyNext('/persistentvolumeclaims/claim-1', 1, 'PATCH', 'reset');
    server.failNext('/persistentvolumeclaims/claim-1', 10, 503, 'GET');
    const err = await rejects(
      writer.updatePersistentVolumeClaim({
        ...current,
        metadata: { ...current.metadata, annotations: { 'volume.kubernetes.io/selected-node': 'node-a' } },
      }),
    );
    assert.equal(err.uncertain, true);
    assert.match(err.message, /network error.*; reading it back failed: .*503/);
    assert.equal(server.writes.length, 1, 'not sent again blindly');
  });

  test('a volume without resourceVersion is refused before any request', async () => {
    server.add(pv('pv-1'));
    const current = readPv();
    const err = await rejects(
      writer.updatePersistentVolume({ ...current, metadata: { ...current.metadata, resourceVersion: '' } }),
    );
    assert.equal(err.code, 400);
    assert.equal(server.writes.length, 0);
  });

  test('a missing volume is NotFound', async () => {
    const err = await rejects(writer.updatePersistentVolume(pv('nope') as unknown as PersistentVolume));
    assert.equal(err.code, 400); // no resourceVersion: refused first
    const err2 = await rejects(
      writer.updatePersistentVolume({
        ...(pv('nope') as unknown as PersistentVolume),
        metadata: { name: 'nope', uid: 'u', resourceVersion: '5' },
      }),
    );
    assert.equal(err2.code, 404);
    assert.equal(err2.reason, 'NotFound');
  });
});

describe('KubeWriter.getPod', () => {
  test('returns the trimmed pod, undefined when it does not exist, and retries 5xx', async () => {
    server.add(pod('web', { nodeName: 'node-a' }));
    server.failNext('/pods/web', 2, 502);
    const p = await writer.getPod('default', 'web');
    assert.equal(p?.spec.nodeName, 'node-a');
    assert.equal((p as { kind?: string }).kind, undefined);
    assert.equal(await writer.getPod('default', 'ghost'), undefined);
  });

  test('an API server that does not answer is a Timeout after the retries', async () => {
    const slow = new KubeWriter({
      kubeConfig: loadKubeConfig({ kubeconfig: await writeKubeconfig(server.url) }),
      backoff: { initialMs: 1, maxMs: 2 },
      retries: 1,
      requestTimeoutMs: 50,
    });
    server.delay(5_000);
    try {
      const err = await rejects(slow.getPod('default', 'web'));
      assert.equal(err.code, 0);
      assert.equal(err.reason, 'Timeout');
      assert.match(err.message, /no answer within 50 ms/);
    } finally {
      server.delay(0);
    }
  });

  test('a network failure becomes a WriteError after the retries', async () => {
    const dead = new KubeWriter({
      kubeConfig: loadKubeConfig({ kubeconfig: await writeKubeconfig('http://127.0.0.1:1') }),
      backoff: { initialMs: 1, maxMs: 2 },
      retries: 1,
    });
    const err = await rejects(dead.getPod('default', 'web'));
    assert.equal(err.code, 0);
    assert.equal(err.reason, 'NetworkError');
    assert.match(err.message, /reading pod "default\/web": network error/);
  });
});
