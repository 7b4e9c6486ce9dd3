// The extender's bind over VolumeBinding with a FakeVolumeBinder (src/volumes/fake-binder.ts): what bind answers and
// undoes when the volume binder fails or succeeds, with no cluster behind the binder.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { PodBinder } from '../../src/extender/bind.ts';
import { Framework } from '../../src/framework/runner.ts';
import { buildVolumePlugins, VOLUME_BINDING } from '../../src/plugins/index.ts';
import { FakeVolumeBinder, type FakeVolumeBinderConfig } from '../../src/volumes/fake-binder.ts';
import { makeNode, makePod } from '../conformance/harness.ts';
import { createTestExtender } from '../helpers/extender.ts';

async function bindWith(config: FakeVolumeBinderConfig) {
  const pod = makePod('web-0', ['data']);
  const node = makeNode('node-a');
  const binder = new FakeVolumeBinder({ nodes: [node], ...config });
  const t = await createTestExtender([node, pod], {}, { volumeController: false });
  const { store, writer } = t.extender.verbs;
  // VolumeBinding alone: the pod's claim exists for the fake only.
  const plugins = buildVolumePlugins({ store, writer, binder }).filter((p) => p.name === VOLUME_BINDING);
  const podBinder = new PodBinder({ ...t.extender.verbs, framework: new Framework(plugins) });
  const answer = await podBinder.bind({
    PodName: 'web-0',
    PodNamespace: pod.metadata.namespace!,
    PodUID: pod.metadata.uid,
    Node: 'node-a',
  });
  return { t, pod, binder, answer };
}

it("a volume binder that fails its bind fails the pod's bind with its error, and nothing stays assumed", async () => {
  const bindErr = new Error('binding volumes: context deadline exceeded');
  const { t, pod, binder, answer } = await bindWith({ bindErr });
  try {
    assert.equal(
      answer.Error,
      'binding volumes on node "node-a" failed: VolumeBinding: binding volumes: context deadline exceeded',
    );
    assert.equal(binder.bindCalled, true);
    assert.equal(binder.revertCalled, true);
    assert.equal(t.cache.isAssumed(pod.metadata.uid), false);
  } finally {
    await t.close();
  }
});

it('a volume binder with every volume bound already: no volume write, the Binding is created', async () => {
  const { t, pod, binder, answer } = await bindWith({ allBound: true });
  try {
    assert.equal(answer.Error, '');
    assert.equal(binder.bindCalled, false);
    await t.waitFor(() => t.store.get('Pod', `${pod.metadata.namespace}/web-0`)?.spec.nodeName === 'node-a');
  } finally {
    await t.close();
  }
});
