// A real kube-scheduler drives the extender end to end, in both registrations README.md and docs/ document (full delegation
// with bindVerb; filter-only with kube-scheduler binding) and both node modes, against every kube-scheduler version
// available. Each case checks what the API server ends up holding and which verb calls the extender received.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import * as build from '../helpers/objects.ts';
import { callExtender } from './extender-process.ts';
import { kubeSchedulers } from './kube-scheduler.ts';
import {
  CSI_CLASS,
  claim,
  clusterObjects,
  localPV,
  pendingPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();

const REGISTRATIONS = [
  { mode: 'delegated', nodeCacheCapable: true },
  { mode: 'delegated', nodeCacheCapable: false },
  { mode: 'scheduler-binds', nodeCacheCapable: true },
  { mode: 'scheduler-binds', nodeCacheCapable: false },
] as const;

type Volume = { spec: { claimRef?: { name: string }; nodeAffinity?: unknown } };

if (found.skip) {
  test('a real kube-scheduler schedules through the extender', { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;
  before(async () => {
    cluster = await startSchedulerCluster(clusterObjects(3));
  });
  after(() => cluster?.stop());

  test("explain names the cluster's own kube-scheduler minor, its API server's", async () => {
    await cluster.add(pendingPod('explained', 'no-such-scheduler'));
    const version = await cluster.api.client.request<{ gitVersion: string }>('GET', '/version');
    // Explained once the extender's watch has delivered the pod (404 until then).
    const answer = await waitFor('the extender knows the pod', async () => {
      const a = await callExtender<{ kubeSchedulerVersion: string }>(cluster.extender, 'POST', '/api/v1/explain', {
        namespace: 'default',
        name: 'explained',
      });
      return a.status === 404 ? undefined : a;
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.kubeSchedulerVersion, /^v\d+\.\d+/.exec(version.gitVersion)?.[0]);
  });

  for (const binary of found.binaries) {
    for (const registration of REGISTRATIONS) {
      const label = `${binary.version} ${registration.mode} nodeCacheCapable=${registration.nodeCacheCapable}`;
      const scheduler = `e2e-${binary.version.replaceAll('.', '-')}-${registration.mode}-${registration.nodeCacheCapable ? 'cache' : 'full'}`;
      describe(label, () => {
        before(() => cluster.scheduler(binary, scheduler, registration));

        test('a pod without volumes is bound after our filter and prioritize', async () => {
          const name = `${scheduler}-plain`;
          await cluster.add(pendingPod(name, scheduler));
          const node = await cluster.boundNode(name);
          assert.match(node, /^node-\d$/);
          const calls = await cluster.recorder.answered(`default/${name}`);
          assert.deepEqual(
            [...new Set(calls.map((c) => c.verb))],
            registration.mode === 'delegated' ? ['filter', 'prioritize', 'bind'] : ['filter', 'prioritize'],
          );
          assert.deepEqual(
            calls.filter((c) => c.status !== 200),
            [],
            'every call answered 200',
          );
          const [filter] = calls;
          assert.equal(filter.nodes, 3, 'the filter saw every node');
          assert.equal(filter.fullNodes, !registration.nodeCacheCapable, 'node names only in node-cache mode');
        });

        test('a pod with a local-PV claim and a CSI claim lands where its PV is, with one PV bound and the CSI claim provisioned there', async () => {
          const name = `${scheduler}-claims`;
          // The only local PV large enough is on node-1; node-0 and node-2 have one that is too small. The case's own
          // class keeps the PVs of a case that failed out of the next one's choice.
          const localClass = `${name}-local`;
          await cluster.add(
            created(build.makeStorageClass(localClass)),
            localPV(`${name}-small-0`, 'node-0', '1Gi', localClass),
            localPV(`${name}-fits`, 'node-1', '10Gi', localClass),
            localPV(`${name}-small-2`, 'node-2', '1Gi', localClass),
            claim(`${name}-local`, localClass, '5Gi'),
            claim(`${name}-csi`, CSI_CLASS, '20Gi'),
            pendingPod(name, scheduler, { claims: [`${name}-local`, `${name}-csi`] }),
          );
          assert.equal(await cluster.boundNode(name), 'node-1');
          const local = (await cluster.api.get('PersistentVolumeClaim', `${name}-local`, 'default'))!;
          assert.equal((local.spec as { volumeName?: string }).volumeName, `${name}-fits`);
          const claimedBy: string[] = [];
          for (const pv of ['small-0', 'fits', 'small-2']) {
            const volume = (await cluster.api.get('PersistentVolume', `${name}-${pv}`)) as unknown as Volume;
            if (volume.spec.claimRef) claimedBy.push(pv);
          }
          assert.deepEqual(claimedBy, ['fits'], 'exactly one local PV is bound');
          // The PV controller marks the claim Bound in a status write of its own, after the writes the pod's binding
          // waited for (its claim's volumeName): on a loaded machine that write may come after the pod is bound.
          const csi = await waitFor(`claim ${name}-csi Bound`, async () => {
            const c = await cluster.api.get('PersistentVolumeClaim', `${name}-csi`, 'default');
            return (c?.status as { phase?: string } | undefined)?.phase === 'Bound' ? c : undefined;
          });
          const annotations = csi.metadata.annotations as Record<string, string>;
          assert.equal(annotations['volume.kubernetes.io/selected-node'], 'node-1');
          // The attempt that bound it: an earlier one may have met an extender whose watch had not yet delivered the
          // PVs and claims created just before the pod (kube-scheduler's informer had them).
          const filters = cluster.recorder.callsFor(`default/${name}`, 'filter');
          const answer = filters.at(-1)!.answer as { NodeNames?: string[]; Nodes?: { items: unknown[] } };
          const passed = registration.nodeCacheCapable ? answer.NodeNames : answer.Nodes?.items;
          assert.equal(passed?.length, 1, 'our filter passed only node-1');
          if (registration.mode === 'delegated') {
            const binds = (await cluster.recorder.answered(`default/${name}`)).filter((c) => c.verb === 'bind');
            assert.deepEqual(
              binds.map((c) => c.answer),
              [{ Error: '' }],
              'our bind did the writes',
            );
            const volumeWrites = (await cluster.writes()).filter(
              (w) => w.user === 'system:kube-scheduler' && w.path.includes(`/${name}-`),
            );
            assert.deepEqual(volumeWrites, [], 'kube-scheduler wrote no volume (its VolumeBinding is off)');
          }
        });
      });
    }
  }
}
