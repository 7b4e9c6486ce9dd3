// Storage capacity with a real kube-scheduler, fully delegated and filter-only (issue 21: joint capacity; issue 24
// item 2: the storage-capacity score now that kube-scheduler's VolumeBinding no longer scores). Nodes node-0, node-1,
// node-2 are in zones a, b, c; each case brings its own CSI class (one per kube-scheduler) with one
// CSIStorageCapacity per zone, so that no case sees another's provisions. Classes, capacities and claims exist before
// the extender starts (only the pods come later), so no filter answers from a view that lacks them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { created } from '../cluster/kube/helpers.ts';
import type { KubeObject } from '../components/kube-api.ts';
import * as build from '../helpers/objects.ts';
import { kubeSchedulers, unschedulableTail } from './kube-scheduler.ts';
import {
  CSI_DRIVER,
  claim,
  clusterObjects,
  pendingPod,
  type SchedulerCluster,
  startSchedulerCluster,
  ZONE,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();

const NODES = 3;
const REGISTRATIONS = ['delegated', 'scheduler-binds'] as const;
const NOT_ENOUGH_SPACE = 'node(s) did not have enough free storage';

/** A capacity-tracked WaitForFirstConsumer class `name` with `sizes` free per zone (none where a zone is left out). */
function csiClass(name: string, sizes: { a?: string; b?: string; c?: string }): KubeObject[] {
  return [
    created(build.makeStorageClass(name, { provisioner: CSI_DRIVER })),
    ...Object.entries(sizes).map(([zone, capacity]) =>
      created(
        build.makeCSIStorageCapacity(`${name}-zone-${zone}`, {
          namespace: 'kube-system',
          className: name,
          capacity,
          nodeTopology: { matchLabels: { [ZONE]: `zone-${zone}` } },
        }),
      ),
    ),
  ];
}

/** Every case's classes and claims for the kube-scheduler named `scheduler`. */
function storageObjects(scheduler: string): KubeObject[] {
  const joint = `${scheduler}-joint`;
  const nowhere = `${scheduler}-nowhere`;
  const [scoreA, scoreB] = [`${scheduler}-score-a`, `${scheduler}-score-b`];
  return [
    ...csiClass(joint, { a: '10Gi', b: '10Gi', c: '30Gi' }),
    claim(`${joint}-1`, joint, '6Gi'),
    claim(`${joint}-2`, joint, '6Gi'),
    ...csiClass(nowhere, { a: '10Gi', b: '10Gi', c: '10Gi' }),
    claim(`${nowhere}-1`, nowhere, '6Gi'),
    claim(`${nowhere}-2`, nowhere, '6Gi'),
    ...csiClass(scoreA, { a: '100Gi', b: '20Gi' }),
    claim(scoreA, scoreA, '10Gi'),
    ...csiClass(scoreB, { a: '20Gi', b: '100Gi' }),
    claim(scoreB, scoreB, '10Gi'),
  ];
}

const schedulerName = (version: string, mode: string) => `capacity-${version.replaceAll('.', '-')}-${mode}`;

type FilterAnswer = { NodeNames: string[]; FailedAndUnresolvableNodes: Record<string, string> };
type Priorities = { Host: string; Score: number }[];

if (found.skip) {
  test('storage capacity decides with a real kube-scheduler', { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;
  before(async () => {
    const storage = found.binaries.flatMap((b) =>
      REGISTRATIONS.flatMap((m) => storageObjects(schedulerName(b.version, m))),
    );
    cluster = await startSchedulerCluster([...clusterObjects(NODES), ...storage]);
    // All at once: their start-ups overlap.
    await Promise.all(
      found.binaries.flatMap((b) =>
        REGISTRATIONS.map((mode) =>
          cluster.scheduler(b, schedulerName(b.version, mode), { mode, nodeCacheCapable: true }),
        ),
      ),
    );
  });
  after(() => cluster?.stop());

  for (const binary of found.binaries) {
    for (const mode of REGISTRATIONS) {
      const scheduler = schedulerName(binary.version, mode);
      // Every case at once: each has its own kube-scheduler, class and claims.
      describe(`${binary.version} ${mode}`, { concurrency: true }, () => {
        test('a zone where each claim fits alone but not both together is never chosen', async () => {
          const name = `${scheduler}-joint`;
          await cluster.add(pendingPod(name, scheduler, { claims: [`${name}-1`, `${name}-2`] }));
          assert.equal(await cluster.boundNode(name), 'node-2');
          const filters = cluster.recorder.callsFor(`default/${name}`, 'filter');
          assert.equal(filters.length, 1, 'one attempt');
          const [filter] = filters;
          assert.equal(filter.nodes, NODES, 'kube-scheduler let every node through to us (its own check is per claim)');
          const answer = filter.answer as FilterAnswer;
          assert.deepEqual(answer.NodeNames, ['node-2']);
          // Unresolvable, as upstream's VolumeBinding filter says it: preemption frees no storage.
          assert.deepEqual(answer.FailedAndUnresolvableNodes, {
            'node-0': NOT_ENOUGH_SPACE,
            'node-1': NOT_ENOUGH_SPACE,
          });
          for (const c of [`${name}-1`, `${name}-2`]) {
            const annotations = (await cluster.api.get('PersistentVolumeClaim', c, 'default'))!.metadata.annotations!;
            assert.equal((annotations as Record<string, string>)['volume.kubernetes.io/selected-node'], 'node-2');
          }
        });

        test('a pod whose claims fit nowhere together stays Pending with our reason in PodScheduled and its FailedScheduling event', async () => {
          const name = `${scheduler}-nowhere`;
          await cluster.add(pendingPod(name, scheduler, { claims: [`${name}-1`, `${name}-2`] }));
          const condition = await cluster.unschedulable(name);
          assert.equal(condition.reason, 'Unschedulable');
          assert.equal(
            condition.message,
            `0/${NODES} nodes are available: ${NODES} ${NOT_ENOUGH_SPACE}.${unschedulableTail(binary.version, NODES)}`,
          );
          const [event] = await cluster.failedScheduling(name);
          assert.equal(event.note, condition.message, 'the event says what the condition says');
          const pod = (await cluster.api.get('Pod', name, 'default'))!;
          assert.equal((pod.spec as { nodeName?: string }).nodeName, undefined);
          for (const c of [`${name}-1`, `${name}-2`]) {
            const { annotations } = (await cluster.api.get('PersistentVolumeClaim', c, 'default'))!.metadata;
            assert.equal(
              (annotations as Record<string, string> | undefined)?.['volume.kubernetes.io/selected-node'],
              undefined,
              'nothing provisioned',
            );
          }
        });

        test('of two zones that fit, kube-scheduler picks the one with more free capacity, as our prioritize scores it', async () => {
          // Mirrored pair (zone a 100Gi and b 20Gi, then the other way round): whichever zone has the room wins, so
          // neither can pass by a tie broken the right way.
          const pair = [
            ['a', 'node-0'],
            ['b', 'node-1'],
          ] as const;
          for (const [suffix] of pair) {
            const name = `${scheduler}-score-${suffix}`;
            await cluster.add(pendingPod(name, scheduler, { claims: [name] }));
          }
          for (const [suffix, expected] of pair) {
            const name = `${scheduler}-score-${suffix}`;
            assert.equal(await cluster.boundNode(name), expected);
            const [prioritize] = cluster.recorder.callsFor(`default/${name}`, 'prioritize');
            const scores = Object.fromEntries((prioritize.answer as Priorities).map((p) => [p.Host, p.Score]));
            const other = expected === 'node-0' ? 'node-1' : 'node-0';
            // 10Gi of 100Gi leaves 90% free, of 20Gi 50%: the default shape (0:10,100:0) scores 9 and 5.
            assert.deepEqual([scores[expected], scores[other]], [9, 5]);
          }
        });
      });
    }
  }
}
