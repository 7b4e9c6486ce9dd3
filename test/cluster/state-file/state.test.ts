import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClusterState } from '../../../src/cluster/state-file/state.ts';
import { ClusterStore } from '../../../src/cluster/store.ts';
import { type AnyObject, KINDS, type Kind, type Node } from '../../../src/cluster/types.ts';
import { makeNode } from '../../helpers/objects.ts';
import { recordEvents } from './helpers.ts';

const node = (name: string, resourceVersion = '', zone = 'a'): Node =>
  makeNode(name, { resourceVersion, labels: { zone } });

function file(...nodes: Node[]): Map<Kind, AnyObject[]> {
  return new Map<Kind, AnyObject[]>([['Node', nodes]]);
}

describe('ClusterState', () => {
  it('honours the file resourceVersions on the first load only; later versions come from one rising counter', () => {
    const state = new ClusterState();
    state.applyFile(file(node('n1', '500'), node('n2')));
    assert.equal(state.get('Node', 'n1')!.metadata.resourceVersion, '500');
    assert.equal(state.get('Node', 'n2')!.metadata.resourceVersion, '501');
    state.applyFile(file(node('n1', '500'), node('n2'), node('n3', '7')));
    assert.equal(state.get('Node', 'n3')!.metadata.resourceVersion, '502');
    assert.equal(state.get('Node', 'n1')!.metadata.resourceVersion, '500', 'unchanged objects keep their version');
  });

  it('delivers back-to-back writes as separate updates, in order', async () => {
    const state = new ClusterState();
    state.applyFile(file(node('n1')));
    const store = new ClusterStore();
    state.attach(store);
    const recorder = recordEvents(store, KINDS);
    const first = state.commit('Node', node('n1', '', 'b'));
    const second = state.commit('Node', node('n1', '', 'c'));
    assert.equal(recorder.events.length, 0, 'nothing reaches the store in the same turn');
    await state.delivered();
    recorder.stop();
    assert.deepEqual(
      recorder.events.map((e) => [e.type, e.obj.metadata.resourceVersion]),
      [
        ['update', first.metadata.resourceVersion],
        ['update', second.metadata.resourceVersion],
      ],
    );
  });

  it('never lets a write that was still in flight resurrect an object a reload removed', async () => {
    const state = new ClusterState();
    state.applyFile(file(node('n1'), node('n2')));
    const store = new ClusterStore();
    state.attach(store);
    state.commit('Node', node('n1', '', 'b'));
    state.applyFile(file(node('n2'))); // the file drops n1 before the write reached the store
    await state.delivered();
    assert.equal(store.get('Node', 'n1'), undefined);
    assert.equal(store.count('Node'), 1);
  });

  it('never lets an in-flight older write overwrite a newer version a reload already delivered', async () => {
    const state = new ClusterState();
    state.applyFile(file(node('n1')));
    const store = new ClusterStore();
    state.attach(store);
    state.commit('Node', node('n1', '', 'b'));
    state.applyFile(file(node('n1', '', 'z'))); // the file changes n1: it wins, with a newer version
    const fromFile = store.get('Node', 'n1')!;
    await state.delivered();
    assert.equal(store.get('Node', 'n1'), fromFile);
    assert.equal(fromFile.metadata.labels?.zone, 'z');
  });

  it('fills in a missing uid and namespace on objects created by a write', () => {
    const state = new ClusterState();
    const pvc = state.commit('PersistentVolumeClaim', {
      metadata: { name: 'c', uid: '', resourceVersion: '' },
      spec: {},
    });
    assert.equal(pvc.metadata.namespace, 'default');
    assert.match(pvc.metadata.uid, /^[0-9a-f]{8}-/);
    assert.equal(state.get('PersistentVolumeClaim', 'default/c'), pvc);
  });
});
