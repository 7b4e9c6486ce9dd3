// The state that outlives a scheduling cycle has one home: the plugins share its decision cache, reservations and
// claim usage, and closing it stops every store subscription the plugins and the nominator hold.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { ClusterWriter } from '../../src/cluster/writer.ts';
import { SchedulingState } from '../../src/framework/scheduling-state.ts';
import { buildVolumePlugins, VolumeBindingPlugin } from '../../src/plugins/index.ts';
import { claim, node, pod, storageClass } from '../helpers/objects.ts';

function build() {
  const store = new ClusterStore();
  const state = new SchedulingState(store);
  const plugins = buildVolumePlugins({ store, writer: {} as ClusterWriter, state });
  const binding = plugins.find((p) => p instanceof VolumeBindingPlugin)!;
  return { store, state, binding };
}

describe('SchedulingState', () => {
  it('is where the volume binding plugin keeps its decisions across cycles', () => {
    const { state, binding } = build();
    assert.equal(binding.decisions, state.decisions);
  });

  it('follows the store until closed, then no subscriber of it or of the plugins runs any more', () => {
    const { store, state, binding } = build();
    const nominated = pod('waiting', { priority: 1 });
    nominated.status = { phase: 'Pending', nominatedNodeName: 'node-a' };
    store.upsert('Pod', nominated);
    assert.equal(state.nominator.size, 1);
    store.upsert('Pod', pod('user', { nodeName: 'node-a', claims: ['c'] }));
    assert.equal(state.claimUsage.users('default/c').size, 1);

    state.close();
    const generation = binding.binder.generation();
    store.upsert('Pod', {
      ...pod('later', { priority: 1 }),
      status: { phase: 'Pending', nominatedNodeName: 'node-a' },
    });
    store.upsert('Pod', pod('user2', { nodeName: 'node-a', claims: ['c'] }));
    store.upsert('StorageClass', storageClass('fast'));
    store.upsert('PersistentVolumeClaim', claim('c2'));
    store.upsert('Node', node('node-b'));
    assert.equal(state.nominator.size, 1, 'the nominator no longer follows pods');
    assert.equal(state.claimUsage.users('default/c').size, 1, 'claim usage no longer follows pods');
    assert.equal(binding.binder.generation(), generation, 'the binder no longer follows volume objects');
    state.close(); // idempotent
  });
});
