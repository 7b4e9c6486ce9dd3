// Delegated bind when it fails, with a real kube-scheduler (issue 21: a 409 on a PV write; issue 24 item 2: the bind
// timeout and what kube-scheduler does when our bind fails; issue 18 item 4: a Binding whose reply is lost is success). Our bind answers the error, kube-scheduler fails the
// attempt and requeues the pod, every assumption is undone, and a later attempt binds: nothing is bound twice, nothing
// is left assumed. The extender's bind timeout is short here (BIND_TIMEOUT_SECONDS) so that a bind can time out.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import * as build from '../helpers/objects.ts';
import type { FakeObject, RecordedWrite } from './fake-apiserver.ts';
import { kubeSchedulers } from './kube-scheduler.ts';
import {
  CSI_DRIVER,
  claim,
  clusterObjects,
  localPV,
  type PodCondition,
  pendingPod,
  type SchedulerCluster,
  type SchedulingEvent,
  startSchedulerCluster,
  ZONE,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();

const BIND_TIMEOUT_SECONDS = 2;

type Volume = { spec: { claimRef?: { name: string } } };
type Claim = { spec: { volumeName?: string }; metadata: { annotations?: Record<string, string> } };

const schedulerName = (version: string) => `bind-${version.replaceAll('.', '-')}`;

/**
 * The 409 case's storage, a local class of its own: claim `-small` (5Gi) fits PVs a and b, claim `-large` (8Gi) fits
 * c and d, all four on node-1 (the only node with PVs), so each claim has a second PV that a bind repeated after a
 * failure could take.
 */
function conflictObjects(name: string): FakeObject[] {
  return [
    created(build.makeStorageClass(name)),
    localPV(`${name}-a`, 'node-1', '5Gi', name),
    localPV(`${name}-b`, 'node-1', '5Gi', name),
    localPV(`${name}-c`, 'node-1', '10Gi', name),
    localPV(`${name}-d`, 'node-1', '10Gi', name),
    claim(`${name}-small`, name, '5Gi'),
    claim(`${name}-large`, name, '8Gi'),
  ];
}

/** The timeout case's storage: a CSI class with capacity in zone b only (node-1), and its claim. */
function timeoutObjects(name: string): FakeObject[] {
  return [
    created(build.makeStorageClass(name, { provisioner: CSI_DRIVER })),
    created(
      build.makeCSIStorageCapacity(name, {
        namespace: 'kube-system',
        className: name,
        capacity: '100Gi',
        nodeTopology: { matchLabels: { [ZONE]: 'zone-b' } },
      }),
    ),
    claim(name, name, '10Gi'),
  ];
}

type BindAnswer = { Error: string };

if (found.skip) {
  test('a failed delegated bind is retried by a real kube-scheduler', { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;
  /** Per write, what a case wants done after it (the fake API server has one onWrite). */
  const writeHooks = new Set<(write: RecordedWrite) => void>();
  before(async () => {
    const storage = found.binaries.flatMap((b) => [
      ...conflictObjects(`${schedulerName(b.version)}-conflict`),
      ...timeoutObjects(`${schedulerName(b.version)}-timeout`),
    ]);
    cluster = await startSchedulerCluster([...clusterObjects(3), ...storage], {
      bindTimeoutSeconds: BIND_TIMEOUT_SECONDS,
    });
    cluster.server.onWrite = (write) => {
      for (const hook of writeHooks) hook(write);
    };
    await Promise.all(
      found.binaries.map((b) =>
        cluster.scheduler(b, schedulerName(b.version), { mode: 'delegated', nodeCacheCapable: true }),
      ),
    );
  });
  after(() => cluster?.stop());

  const bindings = (pod: string) =>
    cluster.server.writes.filter((w) => w.path === `/api/v1/namespaces/default/pods/${pod}/binding`);

  // Every version at once: each case waits on its own objects only.
  describe('a 409 Conflict on the second PV write of our bind', { concurrency: true }, () => {
    for (const binary of found.binaries) {
      test(`${binary.version}: kube-scheduler retries once, the retry binds, and no claim or pod is bound twice`, async () => {
        const name = `${schedulerName(binary.version)}-conflict`;
        const pvPath = (pv: string) => `/api/v1/persistentvolumes/${name}-${pv}`;
        // Once our bind wrote its first PV, the next PV write of this case is refused as a lost race would be.
        let armed = false;
        const hook = (w: RecordedWrite) => {
          if (armed || w.status !== 200 || !w.path.startsWith(`/api/v1/persistentvolumes/${name}-`)) return;
          armed = true;
          cluster.server.failNext(new RegExp(`^/api/v1/persistentvolumes/${name}-`), 1, 409, w.method);
        };
        writeHooks.add(hook);
        try {
          cluster.server.add(
            pendingPod(name, schedulerName(binary.version), { claims: [`${name}-small`, `${name}-large`] }),
          );
          assert.equal(await cluster.boundNode(name), 'node-1');
        } finally {
          writeHooks.delete(hook);
        }
        const pvWrites = cluster.server.writes.filter((w) => ['a', 'b', 'c', 'd'].some((pv) => w.path === pvPath(pv)));
        assert.deepEqual(
          pvWrites.map((w) => w.status),
          [200, 409, 200],
          'the first PV written, the second refused, then written by the retry',
        );
        const binds = (await cluster.recorder.answered(`default/${name}`)).filter((c) => c.verb === 'bind');
        assert.equal(binds.length, 2, 'one retry');
        assert.match((binds[0].answer as BindAnswer).Error, /409 Conflict/);
        assert.equal((binds[1].answer as BindAnswer).Error, '');

        const claimedBy = (claimName: string) =>
          ['a', 'b', 'c', 'd'].filter(
            (pv) =>
              (cluster.server.get('PersistentVolume', `${name}-${pv}`) as unknown as Volume).spec.claimRef?.name ===
              claimName,
          );
        for (const [claimName, candidates] of [
          [`${name}-small`, ['a', 'b']],
          [`${name}-large`, ['c', 'd']],
        ] as const) {
          const pvs = claimedBy(claimName);
          assert.equal(pvs.length, 1, `exactly one PV claims ${claimName}: ${pvs}`);
          assert.ok((candidates as readonly string[]).includes(pvs[0]));
          const bound = cluster.server.get('PersistentVolumeClaim', claimName, 'default') as unknown as Claim;
          assert.equal(bound.spec.volumeName, `${name}-${pvs[0]}`);
        }
        assert.deepEqual(
          bindings(name).map((w) => w.status),
          [201],
          'one Binding',
        );
        assert.deepEqual(
          (await cluster.assumedPods()).filter((p) => p.name === name),
          [],
          'nothing left assumed',
        );
      });
    }
  });

  describe('a Binding applied whose reply is lost, its retries answered 5xx', { concurrency: true }, () => {
    const events = (name: string, reason: string) =>
      (cluster.server.list('events.k8s.io/v1/Event') as unknown as SchedulingEvent[]).filter(
        (e) => e.reason === reason && e.regarding?.name === name,
      );
    for (const binary of found.binaries) {
      test(`${binary.version}: our bind reads the pod back and answers success; kube-scheduler records no failure`, async () => {
        const name = `${schedulerName(binary.version)}-lost`;
        const binding = `/api/v1/namespaces/default/pods/${name}/binding`;
        // The extender's writer tries 1 + 3 times: the first lands and its reply is lost, every retry gets a 500.
        cluster.server.loseReplyNext(binding, 1, 'POST', 'reset');
        cluster.server.failNext(binding, 3, 500, 'POST');
        cluster.server.add(pendingPod(name, schedulerName(binary.version)));
        const node = await cluster.boundNode(name);
        // kube-scheduler records the attempt's outcome: Scheduled, or FailedScheduling had our bind answered an error.
        await waitFor(`an event of ${name}'s attempt`, () =>
          ['Scheduled', 'FailedScheduling'].some((reason) => events(name, reason).length > 0),
        );
        assert.deepEqual(events(name, 'FailedScheduling'), [], 'no FailedScheduling');
        assert.match(events(name, 'Scheduled')[0].note, new RegExp(`to ${node}`));
        assert.deepEqual(
          bindings(name).map((w) => [w.status, w.lost]),
          [
            [201, 'reset'],
            [500, undefined],
            [500, undefined],
            [500, undefined],
          ],
        );
        const binds = (await cluster.recorder.answered(`default/${name}`)).filter((c) => c.verb === 'bind');
        assert.deepEqual(
          binds.map((c) => (c.answer as BindAnswer).Error),
          [''],
          'one bind, answered success',
        );
        const conditions =
          (cluster.server.get('Pod', name, 'default') as { status?: { conditions?: PodCondition[] } }).status
            ?.conditions ?? [];
        assert.deepEqual(
          conditions.filter((c) => c.type === 'PodScheduled' && c.status === 'False'),
          [],
          'no SchedulerError',
        );
        await waitFor('the watch confirms the pod', async () =>
          (await cluster.assumedPods()).every((p) => p.name !== name),
        );
      });
    }
  });

  describe(`a bind that times out (the provisioner is down for longer than ${BIND_TIMEOUT_SECONDS} s)`, {
    concurrency: true,
  }, () => {
    for (const binary of found.binaries) {
      test(`${binary.version}: kube-scheduler gets the error, our assumptions are undone, and the pod binds once the volume is provisioned`, async () => {
        const name = `${schedulerName(binary.version)}-timeout`;
        const release = cluster.controllers.hold(`default/${name}`);
        try {
          cluster.server.add(pendingPod(name, schedulerName(binary.version), { claims: [name] }));
          const failed = await waitFor(`the first bind of ${name} answered`, () =>
            cluster.recorder.callsFor(`default/${name}`, 'bind').find((c) => c.done),
          );
          assert.match((failed.answer as BindAnswer).Error, /context deadline exceeded/);
          const condition = await cluster.unschedulable(name, 'context deadline exceeded');
          assert.equal(condition.reason, 'SchedulerError', 'kube-scheduler failed the attempt on our error');
          const assumed = await cluster.assumedPods();
          assert.deepEqual(
            assumed.filter((p) => p.name === name),
            [],
            'our bind forgot the pod',
          );
          const annotations = (cluster.server.get('PersistentVolumeClaim', name, 'default') as unknown as Claim)
            .metadata.annotations;
          assert.equal(annotations?.['volume.kubernetes.io/selected-node'], 'node-1', 'the provisioner was asked');
        } finally {
          release();
        }
        assert.equal(await cluster.boundNode(name), 'node-1');
        const binds = (await cluster.recorder.answered(`default/${name}`)).filter((c) => c.verb === 'bind');
        assert.ok(binds.length >= 2);
        assert.equal((binds.at(-1)!.answer as BindAnswer).Error, '');
        assert.deepEqual(
          bindings(name).map((w) => w.status),
          [201],
          'one Binding',
        );
        const claimUid = cluster.server.get('PersistentVolumeClaim', name, 'default')!.metadata.uid;
        assert.deepEqual(
          cluster.controllers.provisioned.filter((pv) => pv === `pvc-${claimUid}`),
          [`pvc-${claimUid}`],
          'one volume provisioned',
        );
        assert.deepEqual(
          (await cluster.assumedPods()).filter((p) => p.name === name),
          [],
          'nothing left assumed',
        );
      });
    }
  });
}
