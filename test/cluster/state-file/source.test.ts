import assert from 'node:assert/strict';
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ClusterStateError, ClusterStateSource } from '../../../src/cluster/state-file/source.ts';
import { ClusterStateWriter } from '../../../src/cluster/state-file/writer.ts';
import { ClusterStore } from '../../../src/cluster/store.ts';
import { KINDS } from '../../../src/cluster/types.ts';
import { type RecordingLogger, recordingLogger } from '../../helpers/log.ts';
import { NODE_A, nextEvent, POD_WEB, recordEvents, tempDir } from './helpers.ts';

const NODE_B = NODE_A.replaceAll('node-a', 'node-b').replace('zone-a', 'zone-b');
const PV = `kind: PersistentVolume
apiVersion: v1
metadata:
  name: pv1
  resourceVersion: "40"
spec:
  capacity:
    storage: 10Gi
  storageClassName: local
status:
  phase: Available
`;

describe('ClusterStateSource', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let source: ClusterStateSource | undefined;
  beforeEach(async () => {
    tmp = await tempDir();
  });
  afterEach(async () => {
    await source?.stop();
    source = undefined;
    await tmp.cleanup();
  });

  async function load(text: string, options: { watch?: boolean; logger?: RecordingLogger } = {}) {
    const file = await tmp.file('cluster.yaml', text);
    const store = new ClusterStore();
    source = new ClusterStateSource({ file, watch: options.watch ?? false, logger: options.logger });
    await source.start(store);
    return { file, store, source };
  }

  it('loads every kind into the store and reports all of them synced and never stale', async () => {
    const { store, source } = await load(`${NODE_A}---\n${POD_WEB}`);
    assert.deepEqual(store.unsyncedKinds(), []);
    assert.equal(store.count('Node'), 1);
    assert.equal(store.count('Pod'), 1);
    assert.match(source.description, /^cluster-state .*cluster\.yaml$/);
    const status = source.status();
    assert.deepEqual(
      status.map((s) => s.kind),
      [...KINDS],
    );
    assert.ok(status.every((s) => s.synced && !s.stale));
  });

  it('warns about every skipped kind by name', async () => {
    const logger = recordingLogger();
    await load(`${NODE_A}---\nkind: ConfigMap\nmetadata:\n  name: c\n`, { logger });
    const warning = logger.records.find((e) => e.level === 'warn');
    assert.ok(warning);
    assert.match(warning.msg, /ConfigMap/);
  });

  it('fails to start with a ClusterStateError naming the file when it is malformed or missing', async () => {
    const file = await tmp.file('bad.yaml', 'kind: Pod\nmetadata:\n  name: p\nspec:\n  containers: nope\n');
    await assert.rejects(new ClusterStateSource({ file, watch: false }).start(new ClusterStore()), (err: unknown) => {
      assert.ok(err instanceof ClusterStateError);
      assert.match(err.message, /bad\.yaml: Pod p \(document 1\): \/spec\/containers must be array/);
      return true;
    });
    const missing = join(tmp.dir, 'missing.yaml');
    await assert.rejects(
      new ClusterStateSource({ file: missing, watch: false }).start(new ClusterStore()),
      /missing\.yaml: cannot read/,
    );
  });

  it('keeps integer resourceVersions from the file and numbers the rest above them', async () => {
    const { store } = await load(`${NODE_A}---\n${PV}`);
    assert.equal(store.get('PersistentVolume', 'pv1')!.metadata.resourceVersion, '40');
    assert.equal(store.get('Node', 'node-a')!.metadata.resourceVersion, '41');
  });

  it('keeps uids and resourceVersions stable and fires nothing when a reload finds nothing changed', async () => {
    const { file, store, source } = await load(`${NODE_A}---\n${POD_WEB}`);
    const before = store.get('Pod', 'shop/web')!.metadata;
    const recorder = recordEvents(store, KINDS);
    await writeFile(file, `# a comment only\n${NODE_A}---\n${POD_WEB}`);
    await source.reload();
    recorder.stop();
    assert.deepEqual(recorder.events, []);
    const after = store.get('Pod', 'shop/web')!.metadata;
    assert.equal(after.uid, before.uid);
    assert.equal(after.resourceVersion, before.resourceVersion);
  });

  it('turns a file edit into add, update and delete events, with a newer resourceVersion on the update', async () => {
    const { file, store } = await load(`${NODE_A}---\n${PV}`, { watch: true });
    const added = nextEvent(store, 'Node', (e) => e.type === 'add');
    const updated = nextEvent(store, 'PersistentVolume', (e) => e.type === 'update');
    const deleted = nextEvent(store, 'Node', (e) => e.type === 'delete');
    await writeFile(file, `${NODE_B}---\n${PV.replace('10Gi', '20Gi')}`);
    assert.equal((await added).obj.metadata.name, 'node-b');
    assert.equal((await deleted).obj.metadata.name, 'node-a');
    const update = await updated;
    assert.ok(update.type === 'update');
    assert.equal(update.obj.spec.capacity?.storage, '20Gi');
    assert.ok(Number(update.obj.metadata.resourceVersion) > Number(update.old.metadata.resourceVersion));
  });

  it('notices a save by rename (editors write a new file and move it over the old one)', async () => {
    const { file, store } = await load(NODE_A, { watch: true });
    const added = nextEvent(store, 'Pod', (e) => e.type === 'add');
    const staged = join(tmp.dir, '.cluster.yaml.swp');
    await writeFile(staged, `${NODE_A}---\n${POD_WEB}`);
    await rename(staged, file);
    assert.equal((await added).obj.metadata.name, 'web');
  });

  it('notices a mounted ConfigMap update (the kubelet swaps the ..data symlink)', async () => {
    await mkdir(join(tmp.dir, '..v1'));
    await writeFile(join(tmp.dir, '..v1', 'cluster.yaml'), NODE_A);
    await symlink('..v1', join(tmp.dir, '..data'));
    await symlink(join('..data', 'cluster.yaml'), join(tmp.dir, 'cluster.yaml'));
    const store = new ClusterStore();
    source = new ClusterStateSource({ file: join(tmp.dir, 'cluster.yaml') });
    await source.start(store);
    const added = nextEvent(store, 'Pod', (e) => e.type === 'add');
    await mkdir(join(tmp.dir, '..v2'));
    await writeFile(join(tmp.dir, '..v2', 'cluster.yaml'), `${NODE_A}---\n${POD_WEB}`);
    await symlink('..v2', join(tmp.dir, '..data_tmp'));
    await rename(join(tmp.dir, '..data_tmp'), join(tmp.dir, '..data'));
    assert.equal((await added).obj.metadata.name, 'web');
  });

  it('logs a failed reload and keeps the current state, then applies the next good edit', async () => {
    const logger = recordingLogger();
    const { file, store } = await load(`${NODE_A}---\n${POD_WEB}`, { watch: true, logger });
    const recorder = recordEvents(store, KINDS);
    const failed = logger.next('error');
    await writeFile(file, `${NODE_A}---\nkind: Pod\nmetadata: [broken\n`);
    const entry = await failed;
    assert.match(entry.msg, /cluster-state reload failed, keeping the current state: .*cluster\.yaml: invalid YAML/);
    assert.deepEqual(recorder.events, []);
    assert.equal(store.count('Pod'), 1);
    const deleted = nextEvent(store, 'Pod', (e) => e.type === 'delete');
    await writeFile(file, NODE_A);
    assert.equal((await deleted).obj.metadata.name, 'web');
    recorder.stop();
  });

  describe('writes as an overlay over the file', () => {
    it('a reload keeps a written object when the file did not change it', async () => {
      const { file, store, source } = await load(`${NODE_A}---\n${POD_WEB}`);
      const writer = new ClusterStateWriter(source);
      const pod = store.get('Pod', 'shop/web')!;
      const bound = nextEvent(store, 'Pod', (e) => e.type === 'update');
      await writer.bindPod({ namespace: 'shop', name: 'web', uid: pod.metadata.uid }, 'node-a');
      await bound;
      await writeFile(file, `${NODE_A.replace('8Gi', '16Gi')}---\n${POD_WEB}`);
      await source.reload();
      assert.equal(store.get('Pod', 'shop/web')!.spec.nodeName, 'node-a');
      assert.equal(store.get('Node', 'node-a')!.status?.allocatable?.memory, '16Gi');
    });

    it('the file wins for an object it changed, with a newer resourceVersion than the write', async () => {
      const { file, store, source } = await load(`${NODE_A}---\n${POD_WEB}`);
      const writer = new ClusterStateWriter(source);
      const pod = store.get('Pod', 'shop/web')!;
      await writer.bindPod({ namespace: 'shop', name: 'web', uid: pod.metadata.uid }, 'node-a');
      await source.state.delivered();
      const written = store.get('Pod', 'shop/web')!.metadata.resourceVersion;
      await writeFile(file, `${NODE_A}---\n${POD_WEB.replace('100m', '200m')}`);
      await source.reload();
      const now = store.get('Pod', 'shop/web')!;
      assert.equal(now.spec.nodeName, undefined);
      assert.equal(now.spec.containers[0].resources?.requests?.cpu, '200m');
      assert.ok(Number(now.metadata.resourceVersion) > Number(written));
    });

    it('objects only writes created survive reloads; written objects the file removes are deleted', async () => {
      const { file, store, source } = await load(`${NODE_A}---\n${PV}`);
      const created = source.state.commit('PersistentVolume', {
        metadata: { name: 'pvc-123', uid: 'u-1', resourceVersion: '' },
        spec: { capacity: { storage: '1Gi' } },
      });
      const pv = store.get('PersistentVolume', 'pv1')!;
      await new ClusterStateWriter(source).updatePersistentVolume({
        ...pv,
        metadata: { ...pv.metadata, labels: { a: 'b' } },
      });
      await source.state.delivered();
      assert.equal(
        store.get('PersistentVolume', 'pvc-123')!.metadata.resourceVersion,
        created.metadata.resourceVersion,
      );
      await writeFile(file, `${NODE_A}`);
      await source.reload();
      assert.ok(store.get('PersistentVolume', 'pvc-123'));
      assert.equal(store.get('PersistentVolume', 'pv1'), undefined);
    });
  });
});
