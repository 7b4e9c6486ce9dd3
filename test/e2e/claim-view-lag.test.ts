// kube-scheduler and the extender follow the API server on watches of their own, and the extender's can be behind:
// kube-scheduler retries a pod on the claim event it saw first and asks our filter, whose store has not seen the
// claim yet. Answered from that older view ("not found"), the pod would wait in kube-scheduler's unschedulable queue
// for the next cluster event, up to five minutes. The extender re-reads the claims of a pod that fits nowhere and,
// when one changed, answers an Error that kube-scheduler retries after its backoff: the pod binds once the watch
// catches up. The lag is made here by holding back the extender's watches at the API proxy.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { waitFor } from '../cluster/kube/helpers.ts';
import { kubeSchedulers } from './kube-scheduler.ts';
import {
  claim,
  clusterObjects,
  LOCAL_CLASS,
  localPV,
  pendingPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();
const RULE = 'a pod retried on a claim the extender has not seen yet binds once its watch catches up';

if (found.skip) {
  test(RULE, { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;
  before(async () => {
    cluster = await startSchedulerCluster(clusterObjects(3));
  });
  after(() => cluster?.stop());

  test(RULE, async () => {
    const [binary] = found.binaries;
    await cluster.scheduler(binary, 'lag', { mode: 'delegated', nodeCacheCapable: true });
    await cluster.add(pendingPod('lagging', 'lag', { claims: ['lagging-data'] }));
    await cluster.unschedulable('lagging', 'persistentvolumeclaim "lagging-data" not found');

    cluster.proxy.silenceWatches(true);
    try {
      await cluster.add(localPV('lagging-pv', 'node-1', '10Gi', LOCAL_CLASS), claim('lagging-data', LOCAL_CLASS));
      // kube-scheduler saw the claim and retried; the extender answered from a view without it.
      const behind = await waitFor('a filter answered that the claim changed', () =>
        cluster.recorder
          .callsFor('default/lagging', 'filter')
          .find((c) => String(JSON.stringify(c.answer)).includes('changed since the extender saw it')),
      );
      assert.match(JSON.stringify(behind.answer), /persistentvolumeclaim \\"default\/lagging-data\\" changed/);
    } finally {
      cluster.proxy.silenceWatches(false);
    }
    // No cluster event follows: only kube-scheduler's backoff retry can bind it now (well before five minutes).
    assert.equal(await cluster.boundNode('lagging', 30_000), 'node-1');
  });
}
