// Property of joint capacity accounting: for random sequences of filter → bind → provision → republish on one node,
// the sizes admitted against its CSIStorageCapacity never add up to more than it published. The driver publishes the
// truth each time (what its disk has left), provisioning consumes exactly what was admitted, and nothing else does:
// so the admitted total must stay within the first figure, whatever the interleaving.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { CSIStorageCapacity, PersistentVolumeClaim, Pod } from '../../src/cluster/types.ts';
import { ClusterVolumeBinder } from '../../src/volumes/volume-binder.ts';
import { makeCSIDriver } from '../helpers/objects.ts';
import {
  makeCapacity,
  makePod,
  makeTestPV,
  makeTestPVC,
  node1,
  PROVISIONER,
  PVC_UNBOUND,
  storageClasses,
  TestCluster,
  WAIT_CLASS_WITH_PROVISIONER,
} from './fixtures.ts';

const GI = 2 ** 30;

type Action = { kind: 'bind'; pod: number } | { kind: 'provision'; claim: number } | { kind: 'republish' };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant('bind' as const), pod: fc.nat(9) }),
  fc.record({ kind: fc.constant('provision' as const), claim: fc.nat(29) }),
  fc.record({ kind: fc.constant('republish' as const) }),
);

function capacity(gi: number): CSIStorageCapacity {
  return makeCapacity('node1-lvm', WAIT_CLASS_WITH_PROVISIONER, node1, `${gi}Gi`, '');
}

it('joint: the sizes admitted on a capacity object never exceed what it published', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 30 }),
      fc.array(fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 3 }), {
        minLength: 1,
        maxLength: 10,
      }),
      fc.array(actionArb, { maxLength: 40 }),
      (total, podSizes, actions) => {
        const claims: PersistentVolumeClaim[][] = podSizes.map((sizes, p) =>
          sizes.map((gi, j) =>
            makeTestPVC(`c${p}-${j}`, `${gi}Gi`, '', PVC_UNBOUND, '', '1', WAIT_CLASS_WITH_PROVISIONER),
          ),
        );
        const pods: Pod[] = claims.map((cs, p) => makePod(`p${p}`, { claims: cs, uid: `uid-p${p}` }));
        const cluster = new TestCluster([
          ...storageClasses(),
          makeCSIDriver(PROVISIONER, { storageCapacity: true }),
          node1,
          capacity(total),
          ...claims.flat(),
          ...pods,
        ]);
        const binder = new ClusterVolumeBinder({
          store: cluster.store,
          writer: cluster.writer,
          bindTimeoutSeconds: 10,
          capacityAccounting: 'joint',
        });
        const bound = new Set<number>();
        const selected: PersistentVolumeClaim[] = []; // written with selected-node, not provisioned yet
        let admitted = 0; // bytes admitted against the capacity object, ever
        let used = 0; // bytes the driver's disk has given out
        let version = 1;

        for (const action of actions) {
          if (action.kind === 'bind') {
            const p = action.pod % pods.length;
            if (bound.has(p)) continue;
            const pod = pods[p];
            const found = binder.findPodVolumes(pod, binder.getPodVolumeClaims(pod), node1);
            if (found.reasons.length > 0) continue;
            // reserve (assume), then preBind's write of the annotated claims: the store has them as the API would.
            const { assumed } = binder.assumePodVolumes(pod, 'node1', found.podVolumes);
            for (const d of assumed.dynamicProvisions) {
              cluster.add(d.pvc);
              selected.push(d.pvc);
              admitted += parseGi(d.pvc);
            }
            bound.add(p);
          } else if (action.kind === 'provision') {
            if (selected.length === 0) continue;
            const [pvc] = selected.splice(action.claim % selected.length, 1);
            const size = parseGi(pvc);
            used += size;
            const latest = cluster.store.get('PersistentVolumeClaim', `testns/${pvc.metadata.name}`)!;
            cluster.add(
              makeTestPV(
                `pv-${pvc.metadata.name}`,
                'node1',
                `${size / GI}Gi`,
                '1',
                latest,
                WAIT_CLASS_WITH_PROVISIONER,
              ),
            );
            cluster.add({
              ...latest,
              metadata: {
                ...latest.metadata,
                annotations: { ...latest.metadata.annotations, 'pv.kubernetes.io/bind-completed': 'yes' },
              },
              spec: { ...latest.spec, volumeName: `pv-${pvc.metadata.name}` },
            });
          } else {
            // The driver's new figure: what its disk has left.
            const next = capacity((total * GI - used) / GI);
            next.metadata.resourceVersion = String(++version);
            cluster.add(next);
          }
          assert.ok(admitted <= total * GI, `admitted ${admitted / GI}Gi on a node that published ${total}Gi`);
        }
        // Once everything is provisioned and republished, nothing is in flight any more.
        for (const pvc of selected.splice(0)) {
          const latest = cluster.store.get('PersistentVolumeClaim', `testns/${pvc.metadata.name}`)!;
          cluster.add({ ...latest, spec: { ...latest.spec, volumeName: `pv-${pvc.metadata.name}` } });
        }
        const last = capacity((total * GI - admitted) / GI);
        last.metadata.resourceVersion = String(++version);
        cluster.add(last);
        assert.equal(binder.inFlight.size, 0);
        binder.close();
      },
    ),
    { numRuns: 300 },
  );
});

function parseGi(pvc: PersistentVolumeClaim): number {
  return Number(String(pvc.spec.resources!.requests!.storage).replace('Gi', '')) * GI;
}
