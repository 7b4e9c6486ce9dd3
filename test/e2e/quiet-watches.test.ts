// A kind nobody changes is quiet on a real kube-apiserver: no event, and the first bookmark only ~2 minutes after the
// watch opened. Silence is no failure: with the silence limit far below that, the extender restarts its quiet watches
// (from where they were) again and again, and neither /readyz nor a verb may fail meanwhile, or kube-scheduler's
// pods (ignorable: false) and the Service's endpoints (readiness) would pay for a quiet cluster.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { waitFor } from '../cluster/kube/helpers.ts';
import { kubeSchedulers } from './kube-scheduler.ts';
import { clusterObjects, pendingPod, type SchedulerCluster, startSchedulerCluster } from './scheduler-cluster.ts';

const found = await kubeSchedulers();
const SILENCE_LIMIT_SECONDS = 1;

if (found.skip) {
  test('a quiet kind never makes /readyz or a verb fail', { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;
  before(async () => {
    cluster = await startSchedulerCluster(clusterObjects(3), {
      extenderArgs: ['--watch-stale-seconds', String(SILENCE_LIMIT_SECONDS)],
    });
  });
  after(() => cluster?.stop());

  test('a quiet kind never makes /readyz or a verb fail', async () => {
    const [binary] = found.binaries;
    await cluster.scheduler(binary, 'quiet', { mode: 'delegated', nodeCacheCapable: true });
    const restarts = () =>
      cluster.extender.logs.filter((l) => String(l.msg).includes('silent for more than')).map((l) => String(l.kind));
    const answers: number[] = [];
    let watching = true;
    const probing = (async () => {
      while (watching) {
        answers.push((await fetch(`${cluster.extender.url}/readyz`)).status);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      // Several limits' worth of silence, on several kinds, each restarted more than once.
      await waitFor(
        'quiet watches restarted twice each on three kinds',
        () => {
          const kinds = restarts();
          return new Set(kinds.filter((k, i) => kinds.indexOf(k) !== i)).size >= 3;
        },
        60_000,
      );
      await cluster.add(pendingPod('quiet-pod', 'quiet'));
      assert.match(await cluster.boundNode('quiet-pod'), /^node-\d$/);
      const calls = await cluster.recorder.answered('default/quiet-pod');
      assert.deepEqual(
        calls.filter((c) => c.status !== 200),
        [],
        'every verb answered 200',
      );
    } finally {
      watching = false;
      await probing;
    }
    assert.ok(answers.length > 20, `probed /readyz ${answers.length} times`);
    assert.deepEqual(
      answers.filter((s) => s !== 200),
      [],
      `/readyz stayed 200 through ${restarts().length} restarts of quiet watches`,
    );
    assert.deepEqual(
      cluster.extender.logs.filter((l) => l.level >= 40).map((l) => l.msg),
      [],
      'a quiet kind is nothing to warn about',
    );
  });
}
