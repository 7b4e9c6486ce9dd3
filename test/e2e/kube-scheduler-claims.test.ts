// Claims that make a pod unschedulable everywhere, with kube-scheduler's volume plugins off (full delegation): the
// extender must do what upstream's VolumeBinding PreFilter did (issue 24 item 2). A missing claim, a terminating claim
// and an unbound Immediate claim keep the pod Pending with upstream's reason in its PodScheduled condition and its
// FailedScheduling event. Beside each delegated kube-scheduler runs one without extender and with its own
// VolumeBinding (upstream), on pods using the very same claims, so the two messages are compared whole.
//
// How the messages differ, as v1.35.4, v1.36.3 and v1.37.2 write them (the extender protocol has no pre-filter
// rejection):
//   upstream: 0/3 nodes are available: persistentvolumeclaim "x" not found. not found
//   ours:     0/3 nodes are available: 3 persistentvolumeclaim "x" not found. no new claims to deallocate, preemption:
//             0/3 nodes are available: 3 Preemption is not helpful for scheduling.
// - the reason is counted per node: an extender rejects node by node (FailedAndUnresolvableNodes), where upstream's
//   PreFilter rejects the pod once;
// - the tail is what kube-scheduler's PostFilter plugins say after a filter rejection (any filter's, e.g. a taint's);
//   v1.37 drops "no new claims to deallocate," from it (unschedulableTail). After upstream's PreFilter rejection it
//   is "not found" in all three: DynamicResources' PostFilter fails to read the state its own PreFilter, never
//   reached, would have written, and that error ends the PostFilter phase.
// The reason itself (what an operator acts on) is upstream's, byte for byte.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import type { KubeObject } from '../components/kube-api.ts';
import * as build from '../helpers/objects.ts';
import { kubeSchedulers, unschedulableTail } from './kube-scheduler.ts';
import {
  type ApiWrite,
  CSI_CLASS,
  claim,
  clusterObjects,
  LOCAL_CLASS,
  localPV,
  pendingPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();

const IMMEDIATE_CLASS = 'immediate';
const NODES = 3;

/** The claim every case's pods use, and the reason upstream gives for it. */
const CASES = [
  {
    rule: 'a missing claim',
    claim: 'absent',
    reason: 'persistentvolumeclaim "absent" not found',
  },
  {
    rule: 'a claim being deleted',
    claim: 'terminating',
    reason: 'persistentvolumeclaim "terminating" is being deleted',
  },
  {
    rule: 'an unbound claim of an Immediate class',
    claim: 'immediate',
    reason: 'pod has unbound immediate PersistentVolumeClaims',
  },
];

/**
 * The claim being deleted. The real API server sets no deletionTimestamp on create: it is created with a finalizer of
 * the test's own, which keeps it terminating once deleted (the PVC protection controller removes only its own
 * finalizer, as no scheduled pod uses the claim).
 */
const TERMINATING = (() => {
  const terminating = claim('terminating', LOCAL_CLASS);
  terminating.metadata.finalizers = ['e2e.topology-extender.test/keep'];
  return terminating;
})();

function objects() {
  return [
    ...clusterObjects(NODES),
    created(build.makeStorageClass(IMMEDIATE_CLASS, { mode: 'Immediate' })),
    TERMINATING,
    claim('immediate', IMMEDIATE_CLASS),
  ];
}

const schedulerName = (version: string, kind: 'delegated' | 'upstream') =>
  `claims-${version.replaceAll('.', '-')}-${kind}`;

if (found.skip) {
  test('claims that fit nowhere keep the pod Pending with upstream reasons', { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;
  before(async () => {
    cluster = await startSchedulerCluster(objects());
    await cluster.api.delete(TERMINATING);
    // All at once: their start-ups overlap.
    await Promise.all(
      found.binaries.flatMap((b) => [
        cluster.scheduler(b, schedulerName(b.version, 'delegated'), { mode: 'delegated', nodeCacheCapable: true }),
        cluster.scheduler(b, schedulerName(b.version, 'upstream'), undefined),
      ]),
    );
  });
  after(() => cluster?.stop());

  for (const binary of found.binaries) {
    const delegated = schedulerName(binary.version, 'delegated');
    const upstream = schedulerName(binary.version, 'upstream');
    describe(`${binary.version} fully delegated, beside kube-scheduler's own VolumeBinding`, () => {
      for (const c of CASES) {
        test(`${c.rule} keeps the pod Pending with upstream's reason, counted per node, in PodScheduled and FailedScheduling`, async () => {
          const ours = `${delegated}-${c.claim}`;
          const theirs = `${upstream}-${c.claim}`;
          await cluster.add(
            pendingPod(ours, delegated, { claims: [c.claim] }),
            pendingPod(theirs, upstream, { claims: [c.claim] }),
          );
          const [mine, reference] = await Promise.all([
            cluster.unschedulable(ours, c.reason),
            cluster.unschedulable(theirs, c.reason),
          ]);
          assert.equal(reference.reason, 'Unschedulable');
          assert.ok(reference.message!.startsWith(`0/${NODES} nodes are available: ${c.reason}.`), reference.message);
          assert.equal(mine.reason, 'Unschedulable');
          assert.equal(
            mine.message,
            `0/${NODES} nodes are available: ${NODES} ${c.reason}.${unschedulableTail(binary.version, NODES)}`,
          );

          const events = await cluster.failedScheduling(ours);
          assert.equal(events[0].note, mine.message, 'the event says what the condition says');

          const filters = (await cluster.recorder.answered(`default/${ours}`)).filter((f) => f.verb === 'filter');
          assert.ok(filters.length > 0);
          for (const f of filters) {
            const answer = f.answer as { NodeNames: string[]; FailedAndUnresolvableNodes: Record<string, string> };
            assert.deepEqual(answer.NodeNames, [], 'our filter passed no node');
            assert.deepEqual(
              Object.values(answer.FailedAndUnresolvableNodes),
              Array(NODES).fill(c.reason),
              'every node refused as unresolvable (no preemption can help), with the reason',
            );
          }
          assert.deepEqual(cluster.recorder.callsFor(`default/${ours}`, 'bind'), []);
          const pod = (await cluster.api.get('Pod', ours, 'default'))!;
          assert.equal((pod.spec as { nodeName?: string }).nodeName, undefined);
        });
      }

      test('a pod rejected for a missing claim is bound once the claim and a volume for it appear', async () => {
        const name = `${delegated}-late`;
        const claimName = `${name}-claim`;
        await cluster.add(pendingPod(name, delegated, { claims: [claimName] }));
        await cluster.unschedulable(name, `persistentvolumeclaim "${claimName}" not found`);
        await cluster.add(localPV(`${name}-pv`, 'node-2'), claim(claimName, LOCAL_CLASS));
        // On the claim's creation; when the extender has not seen it yet, its Error has kube-scheduler retry after
        // the backoff (claim-view-lag.test.ts), not after five minutes in the unschedulable queue.
        assert.equal(await cluster.boundNode(name), 'node-2');
        const bound = (await cluster.api.get('PersistentVolumeClaim', claimName, 'default'))!;
        assert.equal((bound.spec as { volumeName?: string }).volumeName, `${name}-pv`);
      });

      for (const volume of ['local', 'provisioned'] as const) {
        test(`a ${volume} claim the extender binds ends exactly as upstream's VolumeBinding and PV controller leave it, with no write fought over`, async () => {
          // One pod through each scheduler, each with a claim of its own (on a PV of its own), on a node of its own
          // (two schedulers offered the same free PVs race for them, which is not what this compares).
          const name = (kind: string) => `${kind === 'ours' ? delegated : upstream}-${volume}-end-state`;
          const node = (kind: string) => (kind === 'ours' ? 'node-1' : 'node-2');
          const kinds = ['ours', 'theirs'];
          await cluster.add(
            ...kinds.flatMap((kind) =>
              volume === 'local'
                ? [localPV(`${name(kind)}-pv`, node(kind)), claim(name(kind), LOCAL_CLASS)]
                : [claim(name(kind), CSI_CLASS)],
            ),
          );
          // The controller's first sync of each (PV Available, claim Pending) before any pod: its writes then differ
          // only by what the binding leaves it.
          const phase = async (kind: 'PersistentVolume' | 'PersistentVolumeClaim', n: string) =>
            (
              (await cluster.api.get(kind, n, kind === 'PersistentVolume' ? undefined : 'default'))?.status as {
                phase?: string;
              }
            )?.phase;
          for (const kind of kinds) {
            if (volume === 'local') {
              await waitFor(
                'the PV controller synced the PV',
                async () => (await phase('PersistentVolume', `${name(kind)}-pv`)) === 'Available',
              );
            }
            await waitFor(
              'the PV controller synced the claim',
              async () => (await phase('PersistentVolumeClaim', name(kind))) === 'Pending',
            );
          }
          await cluster.add(
            ...kinds.map((kind) =>
              pendingPod(name(kind), kind === 'ours' ? delegated : upstream, {
                claims: [name(kind)],
                nodeSelector: { 'kubernetes.io/hostname': node(kind) },
              }),
            ),
          );
          assert.equal(await cluster.boundNode(name('ours')), 'node-1');
          assert.equal(await cluster.boundNode(name('theirs')), 'node-2');
          // The PV controller's part ends with both sides Bound.
          const settled = async (kind: string) => {
            const pvc = await cluster.api.get('PersistentVolumeClaim', name(kind), 'default');
            const volumeName = (pvc?.spec as { volumeName?: string } | undefined)?.volumeName;
            const pv = volumeName ? await cluster.api.get('PersistentVolume', volumeName) : undefined;
            const phases = [pvc, pv].map((o) => (o?.status as { phase?: string } | undefined)?.phase);
            return phases.every((p) => p === 'Bound') ? { pvc: pvc!, pv: pv! } : undefined;
          };
          const ours = await waitFor('our claim and PV are Bound', () => settled('ours'));
          const theirs = await waitFor("upstream's claim and PV are Bound", () => settled('theirs'));
          /** What a binding leaves, with the names that differ between the two put as relations. */
          const endState = ({ pvc, pv }: { pvc: KubeObject; pv: KubeObject }) => {
            const claimRef = (pv.spec as { claimRef: Record<string, string> }).claimRef;
            const annotations = { ...(pvc.metadata.annotations as Record<string, string> | undefined) };
            // The node each was bound to differs by design.
            if (annotations['volume.kubernetes.io/selected-node'])
              annotations['volume.kubernetes.io/selected-node'] = '<node>';
            return {
              claim: {
                annotations,
                namesItsPV: (pvc.spec as { volumeName?: string }).volumeName === pv.metadata.name,
                status: pvc.status,
              },
              volume: {
                annotations: pv.metadata.annotations,
                claimRefFields: Object.keys(claimRef).sort(),
                namesItsClaim: claimRef.name === pvc.metadata.name && claimRef.uid === pvc.metadata.uid,
                status: pv.status,
              },
            };
          };
          // Timestamps differ by when each was bound: their presence is compared.
          const timeless = (state: object) =>
            JSON.parse(JSON.stringify(state), (key, value) => (key.endsWith('Time') && value ? '<time>' : value));
          // Controllers still write after Bound, each side at its own moment (from v1.35 the PVC protection
          // controller sets a used claim's Unused condition to False): compare once both sides agree, or after 10 s.
          // The latest states read are the ones asserted.
          let states = [timeless(endState(ours)), timeless(endState(theirs))];
          await waitFor(
            'the end states agree',
            async () => {
              const [o, t] = [await settled('ours'), await settled('theirs')];
              if (o && t) states = [timeless(endState(o)), timeless(endState(t))];
              return isDeepStrictEqual(states[0], states[1]) || undefined;
            },
            10_000,
          ).catch(() => {});
          assert.deepEqual(states[0], states[1]);

          const paths = [ours, theirs].flatMap(({ pvc, pv }) => [
            `/api/v1/namespaces/default/persistentvolumeclaims/${pvc.metadata.name}`,
            `/api/v1/persistentvolumes/${pv.metadata.name}`,
          ]);
          const writes = (await cluster.writes()).filter((w) =>
            paths.some((p) => w.path === p || w.path === `${p}/status`),
          );
          // A fight is writers undoing each other, again and again; a refusal (409) is a write that lost a race.
          // The PV controller binds the claim as soon as a PV names it, racing our claim half, and writes the claim's
          // status meanwhile: our write that loses reads the claim back and writes again only if it is still unbound,
          // else stops; every write of ours has a bounded number of tries. The controller retries from its informer, which may not have the
          // winning version yet (and in v1.37 the PVC protection controller's status writes race it too, with or
          // without us): a few refusals, each followed by the same write landing. The end states above are equal.
          const refusals = Object.groupBy(
            writes.filter((w) => w.status >= 400),
            (w) => `${w.user} ${w.method} ${w.path}`,
          );
          for (const [write, times] of Object.entries(refusals)) {
            assert.ok(
              times!.every((w) => w.status === 409),
              write,
            );
            const [user, method, path] = write.split(' ');
            // Of a claim: the hold (one try), the half (three), the served hold's drop (three refusals at most).
            if (user === cluster.extenderUser)
              assert.ok(times!.length <= 7, `refused ${times!.length} times: ${write}`);
            else if (user.endsWith(':persistent-volume-binder')) {
              assert.ok(times!.length <= 5, `refused ${times!.length} times: ${write}`);
              const last = writes.findLast((w) => w.user === user && w.method === method && w.path === path);
              // Its bind of a PV (GetBindVolumeToClaim) writes only while its informer has not seen a claimRef naming
              // the claim: refused because ours landed first, it is not repeated once it has, as nothing is left to
              // write. So a refused last try is allowed there only when the PV ended naming its claim (uid included).
              const pvBindDone =
                /^\/api\/v1\/persistentvolumes\/[^/]+$/.test(path) &&
                [ours, theirs].some(
                  ({ pvc, pv }) => path.endsWith(`/${pv.metadata.name}`) && endState({ pvc, pv }).volume.namesItsClaim,
                );
              // Likewise its bind of the claim (bindClaimToVolume), refused because our claim half, carrying
              // bind-completed, landed first: it writes only while its informer shows the claim without them.
              const claimBindDone =
                /^\/api\/v1\/namespaces\/default\/persistentvolumeclaims\/[^/]+$/.test(path) &&
                [ours, theirs].some(({ pvc, pv }) => {
                  const claimState = endState({ pvc, pv }).claim;
                  return (
                    path.endsWith(`/${pvc.metadata.name}`) &&
                    claimState.namesItsPV &&
                    claimState.annotations['pv.kubernetes.io/bind-completed'] === 'yes'
                  );
                });
              assert.ok(last!.status < 400 || pvBindDone || claimBindDone, `its last try was refused too: ${write}`);
            }
          }
          // The controller's writes that landed, per claim: the PV's phase (Available, Bound), the claim's
          // bind-completed (upstream: its volumeName too), the claim's phase; ours are the claim hold, the PV's claimRef
          // and the claim's half (docs/design.md, "What a bind writes"). A claim to provision is spared one: the
          // storage-provisioner annotations, which our selected-node write carries. A local one is spared the claim's
          // bind-completed, which our claim half carries (the PV's Available, the controller's own write, came after
          // its claimRef last changed), unless the controller bound the claim from our PV write before our half landed:
          // then our hold's drop comes after its write.
          const byController = (kind: string) =>
            writes
              .filter(
                (w) => w.user.endsWith(':persistent-volume-binder') && w.status < 400 && w.path.includes(name(kind)),
              )
              .map(
                (w) =>
                  `${w.method} ${w.path.includes('persistentvolumes/') ? 'pv' : 'pvc'}${w.path.endsWith('/status') ? '/status' : ''}`,
              )
              .sort();
          const spared = byController('theirs');
          const ourClaim = `/api/v1/namespaces/default/persistentvolumeclaims/${name('ours')}`;
          const landed = (w: ApiWrite) => w.path === ourClaim && w.status < 400;
          const theirBind = writes.findIndex(
            (w) => landed(w) && w.method === 'PUT' && w.user.endsWith(':persistent-volume-binder'),
          );
          const controllerBoundFirst =
            theirBind >= 0 && theirBind < writes.findLastIndex((w) => landed(w) && w.user === cluster.extenderUser);
          if (volume === 'provisioned' || !controllerBoundFirst) spared.splice(spared.indexOf('PUT pvc'), 1);
          // A claim to provision whose half the controller synced before it had the PV: we wrote its bind-completed
          // (provisioned-halves.ts), a third write of ours after selected-node and the half.
          const oursOnClaim = writes.filter((w) => landed(w) && w.user === cluster.extenderUser).length;
          if (volume === 'provisioned' && oursOnClaim > 2) spared.splice(spared.indexOf('PUT pvc'), 1);
          assert.deepEqual(byController('ours'), spared);
        });
      }

      test('a pod waiting for an unbound Immediate claim is bound where its PV is once the PV controller binds it', async () => {
        const name = `${delegated}-immediate-late`;
        await cluster.add(claim(name, IMMEDIATE_CLASS), pendingPod(name, delegated, { claims: [name] }));
        await cluster.unschedulable(name, 'pod has unbound immediate PersistentVolumeClaims');
        // The PV controller (kube-controller-manager's own) binds Immediate claims without the scheduler: a PV
        // pre-bound to the claim, on node-0. The real one binds it at the claim's next periodic sync
        // (--pvclaimbinder-sync-period, 15 s: a PV pre-bound by name leaves the binding to the claim's sync), where
        // the imitation bound it at once.
        const pv = localPV(`${name}-pv`, 'node-0', '10Gi', IMMEDIATE_CLASS);
        (pv.spec as { claimRef?: object }).claimRef = { kind: 'PersistentVolumeClaim', namespace: 'default', name };
        await cluster.add(pv);
        assert.equal(await cluster.boundNode(name), 'node-0');
        assert.deepEqual(
          (await cluster.recorder.answered(`default/${name}`)).filter((c) => c.verb === 'bind').map((c) => c.answer),
          [{ Error: '' }],
        );
      });
    });
  }
}
