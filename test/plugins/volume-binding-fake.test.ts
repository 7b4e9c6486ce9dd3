// VolumeBinding over a FakeVolumeBinder (src/volumes/fake-binder.ts), as upstream's scheduler tests use
// fake_binder.go: the plugin's own rules (how a binder's answer becomes a status, when it binds, when it reverts)
// without a cluster behind the binder.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClusterStore } from '../../src/cluster/store.ts';
import type { ClusterWriter } from '../../src/cluster/writer.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { buildVolumePlugins, VOLUME_BINDING } from '../../src/plugins/index.ts';
import { VolumeBindingPlugin } from '../../src/plugins/volume-binding.ts';
import { FakeVolumeBinder, type FakeVolumeBinderConfig } from '../../src/volumes/fake-binder.ts';
import { makeNode, makePod } from '../helpers/objects.ts';
import { nodeInfo, view } from './helpers.ts';

const node = makeNode('node-a');
const pod = makePod('web', { claims: ['data'] });
const signal = new AbortController().signal;

function setup(config: FakeVolumeBinderConfig = {}) {
  const binder = new FakeVolumeBinder({ nodes: [node], ...config });
  return { binder, plugin: new VolumeBindingPlugin(binder) };
}

describe('VolumeBinding over a fake binder', () => {
  it("filter: the binder's conflict reasons make the node unschedulable, its internal error an Error", () => {
    const { plugin, binder } = setup({ findReasons: ["node(s) didn't find available persistent volumes to bind"] });
    const state = new CycleState();
    assert.deepEqual(view(plugin.preFilter(state, pod)), ['Success']);
    assert.deepEqual(view(plugin.filter(state, pod, nodeInfo(node))), [
      'UnschedulableAndUnresolvable',
      "node(s) didn't find available persistent volumes to bind",
    ]);
    assert.deepEqual(binder.found, ['node-a']);

    const failing = setup({ findErr: new Error('internal') }).plugin;
    const s2 = new CycleState();
    failing.preFilter(s2, pod);
    assert.deepEqual(view(failing.filter(s2, pod, nodeInfo(node))), ['Error', 'internal']);
  });

  it("preFilter: the binder's claims error makes the pod unschedulable everywhere, and filter never asks it", () => {
    const { plugin, binder } = setup({ claimsError: 'persistentvolumeclaim "data" not found' });
    const state = new CycleState();
    assert.deepEqual(view(plugin.preFilter(state, pod)), [
      'UnschedulableAndUnresolvable',
      'persistentvolumeclaim "data" not found',
    ]);
    assert.deepEqual(binder.found, []);
  });

  it('reserve → preBind with every volume bound already: no bind, only the read-back, which can fail the bind', async () => {
    const { plugin, binder } = setup({ allBound: true, stranded: 'claim "default/data" is not bound' });
    const state = new CycleState();
    plugin.preFilter(state, pod);
    assert.deepEqual(view(plugin.reserve(state, pod, 'node-a')), ['Success']);
    assert.equal(binder.assumeCalled, true);
    const s = await plugin.preBind(state, pod, 'node-a', signal);
    assert.deepEqual(view(s), ['Error', 'binding volumes: claim "default/data" is not bound']);
    assert.equal(binder.bindCalled, false);
  });

  it("reserve: the binder's assume error is an Error, and nothing stays reserved", () => {
    const { plugin } = setup({ assumeErr: new Error('persistentvolume "pv-a" is already bound to claim "x/y"') });
    const state = new CycleState();
    plugin.preFilter(state, pod);
    assert.deepEqual(view(plugin.reserve(state, pod, 'node-a')), [
      'Error',
      'persistentvolume "pv-a" is already bound to claim "x/y"',
    ]);
    assert.deepEqual(plugin.reservedPods(), []);
  });

  it("preBind: the binder's bind error fails preBind with it as the cause; unreserve reverts the assumption", async () => {
    const bindErr = new Error('binding volumes: context deadline exceeded');
    const { plugin, binder } = setup({ bindErr });
    const state = new CycleState();
    plugin.preFilter(state, pod);
    plugin.reserve(state, pod, 'node-a');
    const s = await plugin.preBind(state, pod, 'node-a', signal);
    assert.deepEqual(view(s), ['Error', 'binding volumes: context deadline exceeded']);
    assert.equal(s.cause, bindErr);
    assert.equal(binder.bindCalled, true);
    plugin.unreserve(state, pod, 'node-a');
    assert.equal(binder.revertCalled, true);
    assert.deepEqual(plugin.reservedPods(), []);
  });

  it('buildVolumePlugins hands VolumeBinding the binder it is given', () => {
    const binder = new FakeVolumeBinder();
    const plugins = buildVolumePlugins({ store: new ClusterStore(), writer: {} as ClusterWriter, binder });
    const binding = plugins.find((p) => p instanceof VolumeBindingPlugin);
    assert.equal(binding?.name, VOLUME_BINDING);
    assert.equal(binding?.binder, binder);
  });
});
