// Delegated bind when it fails, with a real kube-scheduler (issue 21: a 409 on a PV write; issue 24 item 2: the bind
// timeout and what kube-scheduler does when our bind fails; issue 18 item 4: a Binding whose reply is lost is success). Our bind answers the error, kube-scheduler fails the
// attempt and requeues the pod, every assumption is undone, and a later attempt binds: nothing is bound twice, nothing
// is left assumed. The extender's bind timeout is short here (BIND_TIMEOUT_SECONDS) so that a bind can time out.
// A real control plane (startSchedulerCluster): the faults a healthy API server does not make (the 409, the lost reply,
// the 500s) are injected by the proxy between the extender and the API server, so the extender sees them and nothing
// else does; what the extender sent is read from the proxy, what the API server applied from its audit log.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import type { KubeObject } from '../components/kube-api.ts';
import * as build from '../helpers/objects.ts';
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

// Long enough for the real PV controller to bind a claim after our claimRef write (0.03-1 s here, more on a loaded
// machine), so that only the timeout case's bind, whose provisioner is held, times out.
const BIND_TIMEOUT_SECONDS = 5;

type Volume = { spec: { claimRef?: { name: string } } };
type Claim = { spec: { volumeName?: string }; metadata: { annotations?: Record<string, string> } };

const schedulerName = (version: string) => `bind-${version.replaceAll('.', '-')}`;

/**
 * The 409 case's storage, a local class of its own: claim `-small` (5Gi) fits PVs a and b, claim `-large` (8Gi) fits
 * c and d, all four on node-1 (the only node with PVs), so each claim has a second PV that a bind repeated after a
 * failure could take.
 */
function conflictObjects(name: string): KubeObject[] {
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
function timeoutObjects(name: string): KubeObject[] {
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
  before(async () => {
    const storage = found.binaries.flatMap((b) => [
      ...conflictObjects(`${schedulerName(b.version)}-conflict`),
      ...timeoutObjects(`${schedulerName(b.version)}-timeout`),
    ]);
    cluster = await startSchedulerCluster([...clusterObjects(3), ...storage], {
      bindTimeoutSeconds: BIND_TIMEOUT_SECONDS,
    });
    await Promise.all(
      found.binaries.map((b) =>
        cluster.scheduler(b, schedulerName(b.version), { mode: 'delegated', nodeCacheCapable: true }),
      ),
    );
  });
  after(() => cluster?.stop());

  const bindingPath = (pod: string) => `/api/v1/namespaces/default/pods/${pod}/binding`;
  /** The Bindings of the pod the API server applied (its audit log), by whoever created them: their statuses. */
  const bindings = async (pod: string) =>
    (await cluster.writes()).filter((w) => w.method === 'POST' && w.path === bindingPath(pod)).map((w) => w.status);
  const get = <T>(kind: string, name: string, namespace?: string) =>
    cluster.api.get(kind, name, namespace) as Promise<T | undefined>;

  // Every version at once: each case waits on its own objects only.
  describe('a 409 Conflict on the second PV write of our bind', { concurrency: true }, () => {
    for (const binary of found.binaries) {
      test(`${binary.version}: kube-scheduler retries once, the retry binds, and no claim or pod is bound twice`, async () => {
        const name = `${schedulerName(binary.version)}-conflict`;
        const pvPaths = ['a', 'b', 'c', 'd'].map((pv) => `/api/v1/persistentvolumes/${name}-${pv}`);
        // The extender writes PVs as merge patches with a resourceVersion precondition: once its first PV write of
        // this case went through, the next one is refused as a lost race would be.
        cluster.proxy.failNext(new RegExp(`^/api/v1/persistentvolumes/${name}-`), 1, 409, 'PATCH', 1);
        await cluster.add(
          pendingPod(name, schedulerName(binary.version), { claims: [`${name}-small`, `${name}-large`] }),
        );
        assert.equal(await cluster.boundNode(name), 'node-1');
        const pvWrites = cluster.proxy.requests.filter((r) => r.method === 'PATCH' && pvPaths.includes(r.path));
        assert.deepEqual(
          pvWrites.map((r) => r.status),
          [200, 409, 200],
          'the first PV written, the second refused, then written by the retry',
        );
        const applied = (await cluster.writes()).filter(
          (w) => w.user === cluster.extenderUser && pvPaths.includes(w.path),
        );
        assert.deepEqual(
          applied.map((w) => w.status),
          [200, 200],
          'the API server applied our two PV writes; the refused one never reached it',
        );
        const binds = (await cluster.recorder.answered(`default/${name}`)).filter((c) => c.verb === 'bind');
        assert.equal(binds.length, 2, 'one retry');
        assert.match((binds[0].answer as BindAnswer).Error, /409 Conflict/);
        assert.equal((binds[1].answer as BindAnswer).Error, '');

        // The claims are bound by the real PV controller after our claimRef writes: wait for both.
        const claims = await waitFor('both claims bound', async () => {
          const both = await Promise.all(
            [`${name}-small`, `${name}-large`].map((c) => get<Claim>('PersistentVolumeClaim', c, 'default')),
          );
          return both.every((c) => c?.spec.volumeName) ? both : undefined;
        });
        const volumes = await Promise.all(
          ['a', 'b', 'c', 'd'].map(async (pv) => [pv, await get<Volume>('PersistentVolume', `${name}-${pv}`)] as const),
        );
        const claimedBy = (claimName: string) =>
          volumes.filter(([, v]) => v?.spec.claimRef?.name === claimName).map(([pv]) => pv);
        for (const [i, [claimName, candidates]] of (
          [
            [`${name}-small`, ['a', 'b']],
            [`${name}-large`, ['c', 'd']],
          ] as const
        ).entries()) {
          const pvs = claimedBy(claimName);
          assert.equal(pvs.length, 1, `exactly one PV claims ${claimName}: ${pvs}`);
          assert.ok((candidates as readonly string[]).includes(pvs[0]));
          assert.equal(claims[i]!.spec.volumeName, `${name}-${pvs[0]}`);
        }
        assert.deepEqual(await bindings(name), [201], 'one Binding');
        assert.deepEqual(
          (await cluster.assumedPods()).filter((p) => p.name === name),
          [],
          'nothing left assumed',
        );
      });
    }
  });

  describe('a Binding applied whose reply is lost, its retries answered 5xx', { concurrency: true }, () => {
    const events = async (name: string, reason: string) =>
      ((await cluster.api.list('events.k8s.io/v1/Event', 'default')) as unknown as SchedulingEvent[]).filter(
        (e) => e.reason === reason && e.regarding?.name === name,
      );
    for (const binary of found.binaries) {
      test(`${binary.version}: our bind reads the pod back and answers success; kube-scheduler records no failure`, async () => {
        const name = `${schedulerName(binary.version)}-lost`;
        const binding = new RegExp(`^${bindingPath(name)}$`);
        // The extender's writer tries 1 + 3 times: the first reaches the API server, which applies it, and its reply
        // is lost (the connection reset); every retry gets a 500 from the proxy.
        cluster.proxy.loseReplyNext(binding, 1, 'POST');
        cluster.proxy.failNext(binding, 3, 500, 'POST');
        await cluster.add(pendingPod(name, schedulerName(binary.version)));
        const node = await cluster.boundNode(name);
        // kube-scheduler records the attempt's outcome: Scheduled, or FailedScheduling had our bind answered an error.
        await waitFor(`an event of ${name}'s attempt`, async () => {
          const [scheduled, failed] = await Promise.all([events(name, 'Scheduled'), events(name, 'FailedScheduling')]);
          return scheduled.length + failed.length > 0;
        });
        assert.deepEqual(await events(name, 'FailedScheduling'), [], 'no FailedScheduling');
        assert.match((await events(name, 'Scheduled'))[0].note, new RegExp(`to ${node}`));
        assert.deepEqual(
          cluster.proxy.requests
            .filter((r) => r.method === 'POST' && r.path === bindingPath(name))
            .map((r) => r.status),
          [0, 500, 500, 500],
          'the extender sent the Binding 4 times: the reply of the first lost (no status), then three 500s',
        );
        assert.deepEqual(await bindings(name), [201], 'the API server applied the first Binding, and only that one');
        const binds = (await cluster.recorder.answered(`default/${name}`)).filter((c) => c.verb === 'bind');
        assert.deepEqual(
          binds.map((c) => (c.answer as BindAnswer).Error),
          [''],
          'one bind, answered success',
        );
        const conditions =
          (await get<{ status?: { conditions?: PodCondition[] } }>('Pod', name, 'default'))?.status?.conditions ?? [];
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
        const release = cluster.provisioner.hold(`default/${name}`);
        try {
          await cluster.add(pendingPod(name, schedulerName(binary.version), { claims: [name] }));
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
          const annotations = (await get<Claim>('PersistentVolumeClaim', name, 'default'))?.metadata.annotations;
          assert.equal(annotations?.['volume.kubernetes.io/selected-node'], 'node-1', 'the provisioner was asked');
        } finally {
          release();
        }
        assert.equal(await cluster.boundNode(name), 'node-1');
        const binds = (await cluster.recorder.answered(`default/${name}`)).filter((c) => c.verb === 'bind');
        assert.ok(binds.length >= 2);
        assert.equal((binds.at(-1)!.answer as BindAnswer).Error, '');
        assert.deepEqual(await bindings(name), [201], 'one Binding');
        const claimUid = (await cluster.api.get('PersistentVolumeClaim', name, 'default'))!.metadata.uid;
        assert.deepEqual(
          cluster.provisioner.provisioned.filter((pv) => pv === `pvc-${claimUid}`),
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
