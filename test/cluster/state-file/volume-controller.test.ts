import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ClusterStateSource } from '../../../src/cluster/state-file/source.ts';
import { VolumeController } from '../../../src/cluster/state-file/volume-controller.ts';
import { ClusterStateWriter } from '../../../src/cluster/state-file/writer.ts';
import { ClusterStore } from '../../../src/cluster/store.ts';
import type { PersistentVolumeClaim } from '../../../src/cluster/types.ts';
import { type RecordingLogger, recordingLogger } from '../../helpers/log.ts';
import { nextEvent, tempDir } from './helpers.ts';

const CLUSTER = `kind: List
items:
- kind: Node
  metadata:
    name: node-1
    labels:
      kubernetes.io/hostname: ip-10-0-0-1
      topology.kubernetes.io/zone: zone-a
      topology.disk.csi.example.com/zone: zone-a
- kind: Node
  metadata:
    name: node-2
    labels:
      kubernetes.io/hostname: ip-10-0-0-2
      topology.kubernetes.io/zone: zone-b
      topology.disk.csi.example.com/zone: zone-b
- kind: StorageClass
  metadata:
    name: fast
  provisioner: disk.csi.example.com
  volumeBindingMode: WaitForFirstConsumer
- kind: StorageClass
  metadata:
    name: nfs
  provisioner: nfs.csi.example.com
  volumeBindingMode: WaitForFirstConsumer
- kind: StorageClass
  metadata:
    name: local
  provisioner: kubernetes.io/no-provisioner
  volumeBindingMode: WaitForFirstConsumer
- kind: CSIDriver
  metadata:
    name: disk.csi.example.com
  spec:
    storageCapacity: true
- kind: CSIStorageCapacity
  metadata:
    name: fast-zone-a
    namespace: kube-system
  storageClassName: fast
  nodeTopology:
    matchLabels:
      topology.disk.csi.example.com/zone: zone-a
  capacity: 100Gi
  maximumVolumeSize: 80Gi
- kind: CSIStorageCapacity
  metadata:
    name: fast-zone-b
    namespace: kube-system
  storageClassName: fast
  nodeTopology:
    matchLabels:
      topology.disk.csi.example.com/zone: zone-b
  capacity: 5Gi
- kind: PersistentVolume
  metadata:
    name: local-1
  spec:
    capacity:
      storage: 50Gi
    accessModes: [ReadWriteOnce]
    storageClassName: local
  status:
    phase: Available
`;

function claim(name: string, className: string, size: string, extra = ''): string {
  return `- kind: PersistentVolumeClaim
  metadata:
    name: ${name}
    namespace: app
    uid: uid-${name}
${extra}  spec:
    accessModes: [ReadWriteOnce]
    resources:
      requests:
        storage: ${size}
    storageClassName: ${className}
  status:
    phase: Pending
`;
}

const selectedNode = (node: string) => `    annotations:\n      volume.kubernetes.io/selected-node: ${node}\n`;

function isBound(pvc: PersistentVolumeClaim): boolean {
  return !!pvc.spec.volumeName && pvc.metadata.annotations?.['pv.kubernetes.io/bind-completed'] === 'yes';
}

describe('VolumeController', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let store: ClusterStore;
  let source: ClusterStateSource;
  let controller: VolumeController;
  let logger: RecordingLogger;

  beforeEach(async () => {
    tmp = await tempDir();
  });
  afterEach(async () => {
    controller.stop();
    await source.stop();
    await tmp.cleanup();
  });

  async function start(items: string, order: 'controller-first' | 'source-first' = 'controller-first') {
    const file = await tmp.file('cluster.yaml', CLUSTER + items);
    store = new ClusterStore();
    logger = recordingLogger();
    source = new ClusterStateSource({ file, watch: false });
    controller = new VolumeController(store, source, logger);
    if (order === 'controller-first') controller.start();
    await source.start(store);
    if (order === 'source-first') controller.start();
    return new ClusterStateWriter(source);
  }

  describe('completing a binding the scheduler started (PV claimRef set, claim not yet bound)', () => {
    it('sets the claim volumeName, bind-completed and bound-by-controller, both phases Bound', async () => {
      const writer = await start(claim('data', 'local', '10Gi'));
      const pvc = store.get('PersistentVolumeClaim', 'app/data')!;
      const pv = store.get('PersistentVolume', 'local-1')!;
      const bound = nextEvent(store, 'PersistentVolumeClaim', (e) => isBound(e.obj));
      await writer.updatePersistentVolume({
        ...pv,
        metadata: { ...pv.metadata, annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' } },
        spec: {
          ...pv.spec,
          claimRef: {
            kind: 'PersistentVolumeClaim',
            apiVersion: 'v1',
            namespace: 'app',
            name: 'data',
            uid: pvc.metadata.uid,
          },
        },
      });
      const { obj } = await bound;
      assert.equal(obj.spec.volumeName, 'local-1');
      assert.deepEqual(obj.metadata.annotations, {
        'pv.kubernetes.io/bound-by-controller': 'yes',
        'pv.kubernetes.io/bind-completed': 'yes',
      });
      assert.deepEqual(obj.status, { phase: 'Bound', capacity: { storage: '50Gi' }, accessModes: ['ReadWriteOnce'] });
      await controller.idle();
      assert.equal(store.get('PersistentVolume', 'local-1')!.status?.phase, 'Bound');
    });

    it('completes a PV pre-bound in the file without a claim uid, filling the uid in (swept at start)', async () => {
      const prebound = `- kind: PersistentVolume
  metadata:
    name: static-1
  spec:
    capacity:
      storage: 5Gi
    accessModes: [ReadWriteOnce]
    storageClassName: local
    claimRef:
      namespace: app
      name: logs
  status:
    phase: Available
`;
      await start(prebound + claim('logs', 'local', '5Gi'), 'source-first');
      await controller.idle();
      const pv = store.get('PersistentVolume', 'static-1')!;
      assert.equal(pv.spec.claimRef?.uid, 'uid-logs');
      assert.equal(pv.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
      assert.equal(pv.status?.phase, 'Bound');
      assert.ok(isBound(store.get('PersistentVolumeClaim', 'app/logs')!));
    });

    it('leaves a PV whose claimRef uid belongs to an earlier claim of the same name alone', async () => {
      const stale = `- kind: PersistentVolume
  metadata:
    name: static-2
  spec:
    capacity:
      storage: 5Gi
    storageClassName: local
    claimRef:
      namespace: app
      name: logs
      uid: some-deleted-claim
  status:
    phase: Released
`;
      await start(stale + claim('logs', 'local', '5Gi'));
      await controller.idle();
      assert.equal(store.get('PersistentVolume', 'static-2')!.status?.phase, 'Released');
      assert.equal(store.get('PersistentVolumeClaim', 'app/logs')!.spec.volumeName, undefined);
    });
  });

  describe('provisioning for a claim with a selected node', () => {
    it('creates pvc-<uid> in the node zone, binds the claim and takes the size off the capacity', async () => {
      const writer = await start(claim('db', 'fast', '30Gi'));
      const pvc = store.get('PersistentVolumeClaim', 'app/db')!;
      const bound = nextEvent(store, 'PersistentVolumeClaim', (e) => isBound(e.obj));
      await writer.updatePersistentVolumeClaim({
        ...pvc,
        metadata: { ...pvc.metadata, annotations: { 'volume.kubernetes.io/selected-node': 'node-1' } },
      });
      assert.equal((await bound).obj.spec.volumeName, 'pvc-uid-db');
      await controller.idle();
      const pv = store.get('PersistentVolume', 'pvc-uid-db')!;
      assert.deepEqual(pv.spec.nodeAffinity, {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'topology.disk.csi.example.com/zone', operator: 'In', values: ['zone-a'] }] },
          ],
        },
      });
      assert.deepEqual(pv.spec.capacity, { storage: '30Gi' });
      assert.deepEqual(pv.spec.accessModes, ['ReadWriteOnce']);
      assert.equal(pv.spec.storageClassName, 'fast');
      assert.deepEqual(pv.spec.csi, { driver: 'disk.csi.example.com', volumeHandle: 'pvc-uid-db' });
      assert.equal(pv.spec.claimRef?.uid, 'uid-db');
      assert.equal(pv.status?.phase, 'Bound');
      const capacity = store.get('CSIStorageCapacity', 'kube-system/fast-zone-a')!;
      assert.equal(capacity.capacity, '70Gi');
      assert.equal(capacity.maximumVolumeSize, '70Gi', 'no single volume larger than what is left');
    });

    it('is idempotent: a restart of the controller neither provisions again nor takes capacity twice', async () => {
      await start(claim('db', 'fast', '30Gi', selectedNode('node-1')));
      await controller.idle();
      controller.stop();
      controller = new VolumeController(store, source);
      controller.start();
      await controller.idle();
      assert.equal(store.get('CSIStorageCapacity', 'kube-system/fast-zone-a')!.capacity, '70Gi');
      assert.equal([...store.list('PersistentVolume')].length, 2);
    });

    it('uses the node hostname label when the driver has no capacity objects or topology keys', async () => {
      await start(claim('share', 'nfs', '1Gi', selectedNode('node-2')));
      await controller.idle();
      const pv = store.get('PersistentVolume', 'pvc-uid-share')!;
      assert.deepEqual(pv.spec.nodeAffinity?.required?.nodeSelectorTerms, [
        { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['ip-10-0-0-2'] }] },
      ]);
      assert.ok(isBound(store.get('PersistentVolumeClaim', 'app/share')!));
    });

    it('drops the selected-node annotation (reschedule) when no capacity on that node admits the size', async () => {
      await start(claim('big', 'fast', '10Gi', selectedNode('node-2')));
      const reset = nextEvent(
        store,
        'PersistentVolumeClaim',
        (e) => e.obj.metadata.name === 'big' && !e.obj.metadata.annotations?.['volume.kubernetes.io/selected-node'],
      );
      await reset;
      await controller.idle();
      assert.equal(store.get('PersistentVolume', 'pvc-uid-big'), undefined);
      assert.equal(store.get('CSIStorageCapacity', 'kube-system/fast-zone-b')!.capacity, '5Gi');
      assert.ok(logger.records.some((e) => e.level === 'warn' && /no CSIStorageCapacity/.test(e.msg)));
    });

    it('does nothing for a class without a provisioner (static PVs only)', async () => {
      await start(claim('static', 'local', '1Gi', selectedNode('node-1')));
      await controller.idle();
      assert.equal(store.get('PersistentVolume', 'pvc-uid-static'), undefined);
      assert.equal(store.get('PersistentVolumeClaim', 'app/static')!.spec.volumeName, undefined);
    });
  });
});
