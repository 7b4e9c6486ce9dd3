import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClusterStateSource } from '../../../src/cluster/state-file/source.ts';
import { VolumeController } from '../../../src/cluster/state-file/volume-controller.ts';
import { ClusterStore } from '../../../src/cluster/store.ts';
import { KINDS, SPREAD_SELECTOR_KINDS } from '../../../src/cluster/types.ts';
import { recordingLogger } from '../../helpers/log.ts';
import { recordEvents } from './helpers.ts';

async function loadExample() {
  const store = new ClusterStore();
  const logger = recordingLogger();
  const source = new ClusterStateSource({ file: 'examples/cluster.yaml', watch: false, logger });
  await source.start(store);
  return { store, logger, source };
}

describe('examples/cluster.yaml', () => {
  it('loads cleanly, without warnings, with objects of every kind but Namespaces, Services and controllers (it has none)', async () => {
    const { store, logger, source } = await loadExample();
    assert.deepEqual(
      logger.records.filter((e) => e.level !== 'info'),
      [],
    );
    for (const kind of KINDS.filter((k) => k !== 'Namespace' && !SPREAD_SELECTOR_KINDS.includes(k)))
      assert.ok(store.count(kind) > 0, `no ${kind} objects`);
    assert.equal(store.count('Node'), 9);
    await source.stop();
  });

  it('is a consistent cluster: claims exist, bound claims and PVs point at each other, every node has a CSINode', async () => {
    const { store, source } = await loadExample();
    for (const pod of store.list('Pod')) {
      for (const v of pod.spec.volumes ?? []) {
        const name = v.persistentVolumeClaim?.claimName;
        if (name)
          assert.ok(
            store.get('PersistentVolumeClaim', `${pod.metadata.namespace}/${name}`),
            `claim ${name} of ${pod.metadata.name}`,
          );
      }
      if (pod.spec.nodeName) assert.ok(store.get('Node', pod.spec.nodeName), `node of ${pod.metadata.name}`);
      if (pod.spec.priorityClassName) assert.ok(store.get('PriorityClass', pod.spec.priorityClassName));
    }
    for (const pvc of store.list('PersistentVolumeClaim')) {
      if (!pvc.spec.volumeName) continue;
      const pv = store.get('PersistentVolume', pvc.spec.volumeName);
      assert.ok(pv, `PV of ${pvc.metadata.name}`);
      assert.equal(pv.spec.claimRef?.uid, pvc.metadata.uid);
      assert.equal(pvc.metadata.annotations?.['pv.kubernetes.io/bind-completed'], 'yes');
    }
    for (const node of store.list('Node')) assert.ok(store.get('CSINode', node.metadata.name));
    await source.stop();
  });

  it('has the pending demo pods web-0 and db-0 waiting for WaitForFirstConsumer claims', async () => {
    const { store, source } = await loadExample();
    for (const [pod, claim, className] of [
      ['web-0', 'www-web-0', 'local-storage'],
      ['db-0', 'data-db-0', 'fast-ssd'],
    ]) {
      assert.equal(store.get('Pod', `default/${pod}`)!.spec.nodeName, undefined);
      const pvc = store.get('PersistentVolumeClaim', `default/${claim}`)!;
      assert.equal(pvc.spec.volumeName, undefined);
      assert.equal(pvc.spec.storageClassName, className);
      assert.equal(store.get('StorageClass', className)!.volumeBindingMode, 'WaitForFirstConsumer');
    }
    await source.stop();
  });

  it('needs nothing from the volume controller at start (the file is already settled)', async () => {
    const store = new ClusterStore();
    const source = new ClusterStateSource({ file: 'examples/cluster.yaml', watch: false });
    const controller = new VolumeController(store, source);
    await source.start(store);
    const recorder = recordEvents(store, KINDS);
    controller.start();
    await controller.idle();
    recorder.stop();
    controller.stop();
    assert.deepEqual(recorder.events, []);
    await source.stop();
  });
});
