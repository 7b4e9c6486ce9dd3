import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ClusterStateSource } from '../../../src/cluster/state-file/source.ts';
import { ClusterStateWriter } from '../../../src/cluster/state-file/writer.ts';
import { ClusterStore } from '../../../src/cluster/store.ts';
import { WriteError } from '../../../src/cluster/writer.ts';
import { NODE_A, nextEvent, POD_WEB, tempDir } from './helpers.ts';

const VOLUMES = `kind: PersistentVolume
metadata:
  name: pv1
spec:
  capacity:
    storage: 10Gi
  storageClassName: local
status:
  phase: Available
---
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: shop
spec:
  resources:
    requests:
      storage: 5Gi
  storageClassName: local
status:
  phase: Pending
`;

function isWriteError(code: number, reason: string, message: string | RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof WriteError, `expected a WriteError, got ${err}`);
    assert.equal(err.code, code);
    assert.equal(err.reason, reason);
    if (typeof message === 'string') assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  };
}

describe('ClusterStateWriter', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let store: ClusterStore;
  let source: ClusterStateSource;
  let writer: ClusterStateWriter;
  beforeEach(async () => {
    tmp = await tempDir();
    const file = await tmp.file('cluster.yaml', `${NODE_A}---\n${POD_WEB}---\n${VOLUMES}`);
    store = new ClusterStore();
    source = new ClusterStateSource({ file, watch: false });
    await source.start(store);
    writer = new ClusterStateWriter(source);
  });
  afterEach(async () => {
    await source.stop();
    await tmp.cleanup();
  });

  describe('bindPod', () => {
    it('sets spec.nodeName and the store hears it as an update after the call returns', async () => {
      const pod = store.get('Pod', 'shop/web')!;
      const updated = nextEvent(store, 'Pod', (e) => e.type === 'update');
      await writer.bindPod({ namespace: 'shop', name: 'web', uid: pod.metadata.uid }, 'node-a');
      assert.equal(store.get('Pod', 'shop/web')!.spec.nodeName, undefined, 'the watch event follows the response');
      const event = await updated;
      assert.equal(event.obj.spec.nodeName, 'node-a');
      assert.ok(Number(event.obj.metadata.resourceVersion) > Number(pod.metadata.resourceVersion));
      assert.equal((await writer.getPod('shop', 'web'))?.spec.nodeName, 'node-a');
    });

    it('answers 404 for a missing pod and for a pod with another UID (recreated under the same name)', async () => {
      await assert.rejects(
        writer.bindPod({ namespace: 'shop', name: 'nope', uid: 'x' }, 'node-a'),
        isWriteError(404, 'NotFound', 'pods "nope" not found'),
      );
      await assert.rejects(
        writer.bindPod({ namespace: 'shop', name: 'web', uid: 'old-uid' }, 'node-a'),
        isWriteError(404, 'NotFound', /^pods "web" not found \(UID in precondition: old-uid/),
      );
    });

    it('answers 409 when the pod is already assigned to a node', async () => {
      const pod = store.get('Pod', 'shop/web')!;
      const ref = { namespace: 'shop', name: 'web', uid: pod.metadata.uid };
      await writer.bindPod(ref, 'node-a');
      await assert.rejects(
        writer.bindPod(ref, 'node-b'),
        isWriteError(
          409,
          'Conflict',
          'Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "node-a"',
        ),
      );
    });
  });

  describe('nominatePod', () => {
    it('sets status.nominatedNodeName; a resourceVersion given is a precondition: a pod changed since is refused', async () => {
      const pod = store.get('Pod', 'shop/web')!;
      const ref = { namespace: 'shop', name: 'web', uid: pod.metadata.uid };
      const read = { ...ref, resourceVersion: pod.metadata.resourceVersion };
      await writer.bindPod(ref, 'node-a');
      await assert.rejects(
        writer.nominatePod(read, 'node-b'),
        isWriteError(
          409,
          'Conflict',
          'Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again',
        ),
      );
      assert.equal((await writer.getPod('shop', 'web'))?.status?.nominatedNodeName, undefined);
      await writer.nominatePod(ref, 'node-b');
      assert.equal((await writer.getPod('shop', 'web'))?.status?.nominatedNodeName, 'node-b');
    });
  });

  describe('updatePersistentVolume / updatePersistentVolumeClaim', () => {
    it('applies an update with the current resourceVersion, returns the stored object and fires an update', async () => {
      const pv = store.get('PersistentVolume', 'pv1')!;
      const updated = nextEvent(store, 'PersistentVolume', (e) => e.type === 'update');
      const claimRef = { kind: 'PersistentVolumeClaim', namespace: 'shop', name: 'data', uid: 'u1' };
      const returned = await writer.updatePersistentVolume({ ...pv, spec: { ...pv.spec, claimRef } });
      assert.ok(Number(returned.metadata.resourceVersion) > Number(pv.metadata.resourceVersion));
      assert.deepEqual(returned.spec.claimRef, claimRef);
      const event = await updated;
      assert.deepEqual(event.obj, returned);
    });

    it('checks the precondition against the latest write, not the store, so back-to-back writes chain', async () => {
      const pvc = store.get('PersistentVolumeClaim', 'shop/data')!;
      const first = await writer.updatePersistentVolumeClaim({
        ...pvc,
        metadata: { ...pvc.metadata, labels: { step: '1' } },
      });
      const second = await writer.updatePersistentVolumeClaim({
        ...first,
        metadata: { ...first.metadata, labels: { step: '2' } },
      });
      assert.ok(Number(second.metadata.resourceVersion) > Number(first.metadata.resourceVersion));
      await source.state.delivered();
      assert.deepEqual(store.get('PersistentVolumeClaim', 'shop/data')!.metadata.labels, { step: '2' });
    });

    it('answers 409 Conflict for a stale resourceVersion, with the API message', async () => {
      const pv = store.get('PersistentVolume', 'pv1')!;
      await writer.updatePersistentVolume({ ...pv, metadata: { ...pv.metadata, labels: { a: '1' } } });
      await assert.rejects(
        writer.updatePersistentVolume({ ...pv, metadata: { ...pv.metadata, labels: { a: '2' } } }),
        isWriteError(
          409,
          'Conflict',
          'Operation cannot be fulfilled on persistentvolumes "pv1": the object has been modified; please apply your changes to the latest version and try again',
        ),
      );
      const pvc = store.get('PersistentVolumeClaim', 'shop/data')!;
      await assert.rejects(
        writer.updatePersistentVolumeClaim({ ...pvc, metadata: { ...pvc.metadata, resourceVersion: '1' } }),
        isWriteError(
          409,
          'Conflict',
          /^Operation cannot be fulfilled on persistentvolumeclaims "data": the object has been modified/,
        ),
      );
    });

    it('answers 404 for objects that do not exist', async () => {
      const pv = store.get('PersistentVolume', 'pv1')!;
      await assert.rejects(
        writer.updatePersistentVolume({ ...pv, metadata: { ...pv.metadata, name: 'ghost' } }),
        isWriteError(404, 'NotFound', 'persistentvolumes "ghost" not found'),
      );
      const pvc = store.get('PersistentVolumeClaim', 'shop/data')!;
      await assert.rejects(
        writer.updatePersistentVolumeClaim({ ...pvc, metadata: { ...pvc.metadata, namespace: 'other' } }),
        isWriteError(404, 'NotFound', 'persistentvolumeclaims "data" not found'),
      );
    });

    it('keeps the stored status: status is a subresource a plain update cannot change', async () => {
      const pvc = store.get('PersistentVolumeClaim', 'shop/data')!;
      const returned = await writer.updatePersistentVolumeClaim({ ...pvc, status: { phase: 'Bound' } });
      assert.equal(returned.status?.phase, 'Pending');
    });
  });

  it('getPod returns a copy and undefined for a missing pod', async () => {
    const pod = await writer.getPod('shop', 'web');
    assert.ok(pod);
    pod.spec.nodeName = 'mutated';
    assert.equal(store.get('Pod', 'shop/web')!.spec.nodeName, undefined);
    assert.equal(await writer.getPod('shop', 'missing'), undefined);
  });
});
