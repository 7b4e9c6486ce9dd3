// Fully delegated, kube-scheduler filters only until it has percentageOfNodesToScore feasible nodes by its own
// plugins (never fewer than 100) and asks the extender about those alone: the nodes a pod's volumes allow may not be
// among them. Upstream's VolumeBinding, a filter plugin there, never has that problem. These clusters have more
// nodes than one sample (500, kube-scheduler told 10 %: 100 a cycle), as a 5,000-node cluster has at its adaptive
// 10 %: a pod whose claim is already bound (a StatefulSet pod after a rollout or an eviction) and a pod whose
// only free local PV is on one node must still be bound, and at once, not after the unschedulable queue's 5-minute
// flush (issue 43).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import type { KubeObject } from '../components/kube-api.ts';
import * as build from '../helpers/objects.ts';
import { kubeSchedulers } from './kube-scheduler.ts';
import {
  claim,
  clusterNode,
  LOCAL_CLASS,
  localPV,
  pendingPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();

const NODES = 500;
const PERCENTAGE = 10;
const SCARCE_CLASS = 'scarce';
/** A few sample cycles: kube-scheduler retries a rejected pod after backoff (1-2 s here) on the event that follows. */
const BOUND_WITHIN_MS = 45_000;

/** Distinct node indices from a fixed seed: the same nodes on every run, spread over the whole cluster. */
function nodeIndices(count: number, seed: number): number[] {
  const chosen = new Set<number>();
  let x = seed;
  while (chosen.size < count) {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    chosen.add(x % NODES);
  }
  return [...chosen];
}

/** A claim already bound to a local PV on `node`: what a StatefulSet pod finds after its first pod ran. */
function boundClaim(name: string, node: string): KubeObject[] {
  const pv = localPV(`${name}-pv`, node);
  (pv.spec as Record<string, unknown>).claimRef = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    namespace: 'default',
    name,
  };
  const pvc = created(
    build.makePVC(name, {
      className: LOCAL_CLASS,
      size: '5Gi',
      volumeName: `${name}-pv`,
      spec: { accessModes: ['ReadWriteOnce'] },
    }),
  );
  return [pv, pvc];
}

const schedulerName = (version: string) => `sampled-${version.replaceAll('.', '-')}`;

if (found.skip) {
  test('pods whose volumes fit outside kube-scheduler’s sample of nodes are bound', { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;
  before(async () => {
    const zones = 'abc';
    cluster = await startSchedulerCluster([
      ...Array.from({ length: NODES }, (_, i) => clusterNode(`node-${i}`, `zone-${zones[i % 3]}`)).flat(),
      created(build.makeStorageClass(LOCAL_CLASS)),
      // One free PV per pod, each on its own node: the scarce-capacity case.
      created(build.makeStorageClass(SCARCE_CLASS)),
    ]);
    await Promise.all(
      found.binaries.map((b) =>
        cluster.scheduler(b, schedulerName(b.version), { mode: 'delegated', nodeCacheCapable: true }, [], {
          percentageOfNodesToScore: PERCENTAGE,
        }),
      ),
    );
  });
  after(() => cluster?.stop());

  const claimOf = (name: string) =>
    cluster.api.get<KubeObject & { spec: { volumeName?: string }; status?: { phase?: string } }>(
      'PersistentVolumeClaim',
      name,
      'default',
    );

  // The rollout below depends on it: the tests' stand-in kubelet (finishTerminatingPods) confirms a deletion from a
  // watch that may be late; by name alone it would delete the pod the rollout has just made again.
  test('a late confirmation of a pod’s deletion leaves the pod recreated under its name', async () => {
    const name = 'recreated-under-its-name';
    const first = await cluster.api.create(pendingPod(name, 'no-such-scheduler'));
    await cluster.api.delete(first, 0);
    await waitFor(`pod ${name} gone`, async () => !(await cluster.api.get('Pod', name, 'default')));
    const second = await cluster.api.create(pendingPod(name, 'no-such-scheduler'));
    await cluster.api.delete(first, 0);
    assert.equal((await cluster.api.get('Pod', name, 'default'))?.metadata.uid, second.metadata.uid);
    await cluster.api.delete(second, 0);
  });

  for (const [v, binary] of found.binaries.entries()) {
    const scheduler = schedulerName(binary.version);
    describe(`${binary.version} fully delegated, ${NODES} nodes, ${PERCENTAGE} % of them sampled`, () => {
      test('pods whose claims are bound to local PVs on nodes outside the sample are bound there', async () => {
        const nodes = nodeIndices(8, 17 + v).map((i) => `node-${i}`);
        const names = nodes.map((_, i) => `${scheduler}-bound-${i}`);
        await cluster.add(...nodes.flatMap((node, i) => boundClaim(`${names[i]}-data`, node)));
        // Bound before the pods exist, as a StatefulSet's claims are when its pods are recreated.
        for (const name of names) {
          await waitFor(
            `claim ${name}-data bound`,
            async () => (await claimOf(`${name}-data`))?.status?.phase === 'Bound',
          );
        }
        await cluster.add(...names.map((name) => pendingPod(name, scheduler, { claims: [`${name}-data`] })));
        const bound = await Promise.all(names.map((name) => cluster.boundNode(name, BOUND_WITHIN_MS)));
        assert.deepEqual(bound, nodes, "each pod on its PV's node");
      });

      test('pods deleted and recreated one by one (a StatefulSet rollout) are bound again on their claims’ nodes', async () => {
        const nodes = nodeIndices(4, 59 + v).map((i) => `node-${i}`);
        const names = nodes.map((_, i) => `${scheduler}-rollout-${i}`);
        await cluster.add(...nodes.flatMap((node, i) => boundClaim(`${names[i]}-data`, node)));
        for (const name of names) {
          await waitFor(
            `claim ${name}-data bound`,
            async () => (await claimOf(`${name}-data`))?.status?.phase === 'Bound',
          );
        }
        const pods = names.map((name) => pendingPod(name, scheduler, { claims: [`${name}-data`] }));
        await cluster.add(...pods);
        for (const name of names) await cluster.boundNode(name, BOUND_WITHIN_MS);
        for (const [i, pod] of pods.entries()) {
          await cluster.api.delete(pod, 0);
          await waitFor(`pod ${names[i]} gone`, async () => !(await cluster.api.get('Pod', names[i], 'default')));
          await cluster.add(pendingPod(names[i], scheduler, { claims: [`${names[i]}-data`] }));
          assert.equal(await cluster.boundNode(names[i], BOUND_WITHIN_MS), nodes[i]);
        }
      });

      test('a pod whose only free local PV is on one node of 500 is bound there', async () => {
        for (const [i, index] of nodeIndices(3, 101 + v).entries()) {
          const name = `${scheduler}-scarce-${i}`;
          const node = `node-${index}`;
          await cluster.add(
            localPV(`${name}-pv`, node, '10Gi', SCARCE_CLASS),
            claim(`${name}-data`, SCARCE_CLASS, '10Gi'),
          );
          await cluster.add(pendingPod(name, scheduler, { claims: [`${name}-data`] }));
          assert.equal(await cluster.boundNode(name, BOUND_WITHIN_MS), node);
          const data = await claimOf(`${name}-data`);
          assert.equal(data?.spec.volumeName, `${name}-pv`);
        }
      });
    });
  }
}
