// bind undoes its pod assumption whatever fails after it, a plugin that throws instead of answering included.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { PodBinder } from '../../src/extender/bind.ts';
import { Framework } from '../../src/framework/runner.ts';
import { makeNode, makePod } from '../conformance/harness.ts';
import { createTestExtender } from '../helpers/extender.ts';

const throwsIn = (point: 'preFilter' | 'reserve' | 'preBind') => ({
  name: 'Broken',
  ...(point === 'preFilter'
    ? {
        preFilter: () => {
          throw new Error('broken preFilter');
        },
      }
    : {}),
  ...(point === 'reserve'
    ? {
        reserve: () => ({ code: 'Success' as const, reasons: [] }),
        unreserve: () => {
          throw new Error('broken unreserve');
        },
        preBind: async () => ({ code: 'Error' as const, reasons: ['volumes never bound'] }),
      }
    : {}),
});

for (const point of ['preFilter', 'reserve'] as const) {
  it(`a bind whose plugin throws (${point === 'reserve' ? 'in unreserve, after a failed preBind' : 'in preFilter'}) answers an Error and forgets the assumed pod`, async () => {
    const pod = makePod('web-0', []);
    const t = await createTestExtender([makeNode('node-a'), pod]);
    try {
      const binder = new PodBinder({ ...t.extender.verbs, framework: new Framework([throwsIn(point)]) });
      const args = {
        PodName: 'web-0',
        PodNamespace: pod.metadata.namespace!,
        PodUID: pod.metadata.uid,
        Node: 'node-a',
      };
      const answer = await binder.bind(args);
      assert.match(answer.Error, /broken|never bound/);
      assert.equal(t.cache.isAssumed(pod.metadata.uid), false);
      assert.equal(t.cache.nodeInfo('node-a')?.pods.size, 0);
    } finally {
      await t.close();
    }
  });
}
