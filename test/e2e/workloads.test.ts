// The pods that workloads make, made by their own controllers: kube-controller-manager's StatefulSet, Deployment and
// ephemeral-volume controllers, node life cycle with taint-based eviction, on nodes whose kubelets KWOK plays. Each
// kube-scheduler minor in both registrations (fully delegated, and kube-scheduler's VolumeBinding binding), each with
// its own storage classes so that their pods never compete for a PV. What none of the suites that create pods
// themselves can see: claims made from templates and after the pod, a pod recreated beside its bound claim, a node
// that stops answering under a pod's local volume.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeApiError } from '../../src/cluster/kube/client.ts';
import { created, waitFor } from '../cluster/kube/helpers.ts';
import { KWOK_NODE_LABEL } from '../components/control-plane.ts';
import type { KubeObject } from '../components/kube-api.ts';
import * as build from '../helpers/objects.ts';
import { callExtender } from './extender-process.ts';
import { kubeSchedulers } from './kube-scheduler.ts';
import {
  CSI_CLASS,
  csiStorage,
  HOSTNAME,
  kwokNode,
  localPV,
  type SchedulerCluster,
  startSchedulerCluster,
  ZONE,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();

const NODES = ['node-0', 'node-1', 'node-2', 'node-3'];
/** Its kubelet stops answering in the lost-node test; no other test's pods can land there. */
const LOST = 'node-lost';
/** Cordoned and drained in the drain test; likewise only that test's PVs are there. */
const DRAIN = 'node-drain';
/** Joins the cluster during a test, with new local PVs. */
const ADDED = 'node-added';
const REGISTRATIONS = ['delegated', 'scheduler-binds'] as const;
/** A controller's pods go Running within a second here; a loaded CI machine gets a minute. */
const WITHIN_MS = 60_000;

interface Case {
  version: string;
  mode: (typeof REGISTRATIONS)[number];
  scheduler: string;
  /** Its own statically provisioned local class, four free PVs on each of NODES. */
  localClass: string;
  /** Its own local class with one PV on LOST. */
  lostClass: string;
  /** Its own local class with one PV on DRAIN and one on node-1. */
  drainClass: string;
}

const cases: Case[] = found.binaries.flatMap((b) =>
  REGISTRATIONS.map((mode) => {
    const scheduler = `wl-${mode}-${b.version.replaceAll('.', '-')}`;
    return {
      version: b.version,
      mode,
      scheduler,
      localClass: `${scheduler}-local`,
      lostClass: `${scheduler}-lost`,
      drainClass: `${scheduler}-drain`,
    };
  }),
);

type Pod = KubeObject & {
  metadata: { deletionTimestamp?: string; ownerReferences?: { kind: string; name: string }[] };
  spec: { nodeName?: string; volumes?: { persistentVolumeClaim?: { claimName: string } }[] };
  status?: { phase?: string; conditions?: { type: string; status: string; message?: string }[] };
};
type Claim = KubeObject & { spec: { volumeName?: string }; status?: { phase?: string } };
type PV = KubeObject & { spec: { nodeAffinity?: { required: { nodeSelectorTerms: NodeTerm[] } } } };
type NodeTerm = { matchExpressions: { key: string; values: string[] }[] };

function statefulSet(name: string, c: Case, replicas: number, className: string, extra: object = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { schedulerName: c.scheduler, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data' },
          spec: {
            accessModes: ['ReadWriteOnce'],
            storageClassName: className,
            resources: { requests: { storage: '5Gi' } },
          },
        },
      ],
      ...extra,
    },
  };
}

/** The node a PV's node affinity admits (a local PV names one). */
function pvNode(pv: PV): string | undefined {
  const terms = pv.spec.nodeAffinity?.required.nodeSelectorTerms ?? [];
  return terms.flatMap((t) => t.matchExpressions).find((e) => e.key === HOSTNAME)?.values[0];
}

if (found.skip) {
  test('workload controllers’ pods are scheduled with their volumes', { skip: found.skip }, () => {});
} else {
  let cluster: SchedulerCluster;
  const api = () => cluster.api;
  const pods = async (app: string) =>
    (await api().list<Pod>('Pod', 'default')).filter((p) => (p.metadata.labels as Record<string, string>)?.app === app);
  /** The app's pods once `count` of them run, none terminating, every claim bound: name → node. */
  const running = (app: string, count: number) =>
    waitFor(
      `${count} running pods of ${app}`,
      async () => {
        const list = (await pods(app)).filter((p) => !p.metadata.deletionTimestamp);
        if (list.length !== count || !list.every((p) => p.status?.phase === 'Running')) return undefined;
        return new Map(list.map((p) => [p.metadata.name, p.spec.nodeName!]));
      },
      WITHIN_MS,
    ).catch((err) => {
      throw new Error(`${(err as Error).message}\n${cluster.whyNotBound(`${app}-0`)}`);
    });
  /** Where each claim's PV lives: claim name → node. */
  const claimNodes = async (names: string[]) => {
    const out = new Map<string, string | undefined>();
    for (const name of names) {
      const claim = await api().get<Claim>('PersistentVolumeClaim', name, 'default');
      const pv = claim?.spec.volumeName ? await api().get<PV>('PersistentVolume', claim.spec.volumeName) : undefined;
      out.set(name, pv ? pvNode(pv) : undefined);
    }
    return out;
  };
  /**
   * The claim once Bound. KWOK runs a pod as soon as it is bound, before the PV controller has finished its claim's
   * status (a kubelet would mount the volume first).
   */
  const boundClaim = (name: string) =>
    waitFor(
      `${name} bound`,
      async () => {
        const pvc = await api().get<Claim>('PersistentVolumeClaim', name, 'default');
        return pvc?.status?.phase === 'Bound' ? pvc : undefined;
      },
      WITHIN_MS,
    );
  /** A new revision of the StatefulSet's pod template (an annotation), as `kubectl rollout restart` makes. */
  const updateTemplate = (name: string) =>
    api().patch(
      { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name, namespace: 'default' } },
      { spec: { template: { metadata: { annotations: { revision: '2' } } } } },
    );
  /** Updates the template and waits until `count` pods made after it run: the rollout's pods. */
  const rollOut = async (name: string, count: number) => {
    const before = new Map((await pods(name)).map((p) => [p.metadata.name, p.metadata.uid]));
    await updateTemplate(name);
    return waitFor(
      `${name} rolled out`,
      async () => {
        const fresh = (await pods(name)).filter(
          (p) => !p.metadata.deletionTimestamp && before.get(p.metadata.name) !== p.metadata.uid,
        );
        return fresh.length === count && fresh.every((p) => p.status?.phase === 'Running') ? fresh : undefined;
      },
      WITHIN_MS,
    );
  };
  const zoneOf = async (node: string) =>
    ((await api().get('Node', node))?.metadata.labels as Record<string, string> | undefined)?.[ZONE];
  const scale = (name: string, replicas: number) =>
    api().patch(
      { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name, namespace: 'default' } },
      { spec: { replicas } },
    );

  before(async () => {
    const zones = ['zone-a', 'zone-b', 'zone-c', 'zone-a'];
    cluster = await startSchedulerCluster(
      [
        ...NODES.flatMap((n, i) => kwokNode(n, zones[i])),
        ...kwokNode(LOST, 'zone-b'),
        ...kwokNode(DRAIN, 'zone-c'),
        // No attacher here: KWOK's kubelets wait for no VolumeAttachment.
        ...csiStorage({ attachRequired: false }),
        ...cases.flatMap((c) => [
          created(build.makeStorageClass(c.localClass)),
          created(build.makeStorageClass(c.lostClass)),
          ...NODES.flatMap((n) =>
            [0, 1, 2, 3].map((k) => localPV(`${c.localClass}-${n}-${k}`, n, '10Gi', c.localClass)),
          ),
          localPV(`${c.lostClass}-pv`, LOST, '10Gi', c.lostClass),
          created(build.makeStorageClass(c.drainClass)),
          localPV(`${c.drainClass}-a`, DRAIN, '10Gi', c.drainClass),
          localPV(`${c.drainClass}-b`, 'node-1', '10Gi', c.drainClass),
        ]),
      ],
      { workloads: true },
    );
    type Node = KubeObject & { status?: { conditions?: { type: string; status: string }[] } };
    await waitFor(
      'KWOK has made every node Ready',
      async () => {
        const nodes = await api().list<Node>('Node');
        const ready = nodes.filter((n) => n.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'));
        return ready.length === NODES.length + 2;
      },
      WITHIN_MS,
    );
    for (const b of found.binaries) {
      for (const c of cases.filter((x) => x.version === b.version)) {
        await cluster.scheduler(b, c.scheduler, { mode: c.mode, nodeCacheCapable: true });
      }
    }
  });
  after(() => cluster?.stop());

  describe('StatefulSet with volumeClaimTemplates', () => {
    test('its pods run on their claims’ nodes through scale down, scale up and a rolling update, and keep their claims', async () => {
      await Promise.all(
        cases.map(async (c) => {
          const name = `${c.scheduler}-sts`;
          await api().create(statefulSet(name, c, 2, c.localClass, { podManagementPolicy: 'Parallel' }));
          const first = await running(name, 2);
          const claims = [0, 1, 2].map((i) => `data-${name}-${i}`);
          const where = await claimNodes(claims.slice(0, 2));
          for (const [pod, node] of first) assert.equal(node, where.get(`data-${pod}`), `${c.scheduler}: ${pod}`);

          // Scale down: the claim stays (the default retention policy), bound; scale up: its pod returns beside it.
          await scale(name, 1);
          await running(name, 1);
          await scale(name, 3);
          const third = await running(name, 3);
          const after = await claimNodes(claims);
          assert.equal(after.get(claims[1]), where.get(claims[1]), `${c.scheduler}: data-${name}-1 kept its PV`);
          for (const [pod, node] of third) assert.equal(node, after.get(`data-${pod}`), `${c.scheduler}: ${pod}`);

          // A rolling update deletes each pod and makes it again, last ordinal first: each comes back to its claim.
          const rolled = await rollOut(name, 3);
          for (const p of rolled) assert.equal(p.spec.nodeName, after.get(`data-${p.metadata.name}`));
        }),
      );
    });

    test('persistentVolumeClaimRetentionPolicy whenScaled: Delete removes a scaled-down claim and scale-up binds a new one', async () => {
      await Promise.all(
        cases.map(async (c) => {
          const name = `${c.scheduler}-ret`;
          await api().create(
            statefulSet(name, c, 2, c.localClass, {
              podManagementPolicy: 'Parallel',
              persistentVolumeClaimRetentionPolicy: { whenScaled: 'Delete', whenDeleted: 'Retain' },
            }),
          );
          await running(name, 2);
          const claim = `data-${name}-1`;
          const old = await api().get<Claim>('PersistentVolumeClaim', claim, 'default');
          await scale(name, 1);
          await waitFor(
            `${claim} deleted with its pod`,
            async () => !(await api().get('PersistentVolumeClaim', claim, 'default')),
            WITHIN_MS,
          );
          await scale(name, 2);
          const again = await running(name, 2);
          const fresh = await boundClaim(claim);
          assert.notEqual(fresh.metadata.uid, old?.metadata.uid, `${c.scheduler}: a new claim`);
          // The old PV was Retain: Released, never bound again; the new claim has another.
          assert.notEqual(fresh.spec.volumeName, old?.spec.volumeName);
          assert.equal(again.get(`${name}-1`), (await claimNodes([claim])).get(claim));
        }),
      );
    });

    test('a RollingUpdate with maxUnavailable 2 replaces pods two at a time, each beside its claim', async () => {
      await Promise.all(
        cases.map(async (c) => {
          const name = `${c.scheduler}-maxu`;
          await api().create(
            statefulSet(name, c, 3, c.localClass, {
              podManagementPolicy: 'Parallel',
              updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 2 } },
            }),
          );
          const placed = await running(name, 3);
          const rolled = await rollOut(name, 3);
          for (const p of rolled) assert.equal(p.spec.nodeName, placed.get(p.metadata.name), `${c.scheduler}`);
        }),
      );
    });

    test('claims of a provisioned WaitForFirstConsumer class are made in their pods’ zones, and a deleted pod returns to its zone', async () => {
      await Promise.all(
        cases.map(async (c) => {
          const name = `${c.scheduler}-csi`;
          await api().create(statefulSet(name, c, 2, CSI_CLASS, { podManagementPolicy: 'Parallel' }));
          const placed = await running(name, 2);
          const pvZone = async (claimName: string) => {
            const claim = await boundClaim(claimName);
            const pv = await api().get<KubeObject & { spec: { nodeAffinity?: unknown } }>(
              'PersistentVolume',
              claim.spec.volumeName ?? '',
            );
            return JSON.stringify(pv?.spec.nodeAffinity);
          };
          for (const [pod, node] of placed) {
            assert.match(await pvZone(`data-${pod}`), new RegExp(`"${await zoneOf(node)}"`), `${c.scheduler}: ${pod}`);
          }
          const old = await api().get<Pod>('Pod', `${name}-0`, 'default');
          await api().delete(old!);
          const fresh = await waitFor(
            `${name}-0 made again`,
            async () => {
              const p = await api().get<Pod>('Pod', `${name}-0`, 'default');
              return p && p.metadata.uid !== old?.metadata.uid && p.status?.phase === 'Running' ? p : undefined;
            },
            WITHIN_MS,
          );
          assert.equal(await zoneOf(fresh.spec.nodeName!), await zoneOf(placed.get(`${name}-0`)!), c.scheduler);
        }),
      );
    });

    test('updateStrategy OnDelete: a pod is replaced only once deleted, on its claim’s node, with the new template', async () => {
      await Promise.all(
        cases.map(async (c) => {
          const name = `${c.scheduler}-ondel`;
          await api().create(
            statefulSet(name, c, 2, c.localClass, {
              podManagementPolicy: 'Parallel',
              updateStrategy: { type: 'OnDelete' },
            }),
          );
          const placed = await running(name, 2);
          await updateTemplate(name);
          const old = await api().get<Pod>('Pod', `${name}-1`, 'default');
          await api().delete(old!);
          const fresh = await waitFor(
            `${name}-1 replaced`,
            async () => {
              const p = await api().get<Pod>('Pod', `${name}-1`, 'default');
              return p && p.metadata.uid !== old?.metadata.uid && p.status?.phase === 'Running' ? p : undefined;
            },
            WITHIN_MS,
          );
          assert.equal(fresh.spec.nodeName, placed.get(`${name}-1`), `${c.scheduler}: back beside data-${name}-1`);
          assert.equal((fresh.metadata.annotations as Record<string, string> | undefined)?.revision, '2');
          // The other pod was not touched: OnDelete waits for the operator.
          const untouched = await api().get<Pod>('Pod', `${name}-0`, 'default');
          assert.equal((untouched?.metadata.annotations as Record<string, string> | undefined)?.revision, undefined);
        }),
      );
    });

    test('persistentVolumeClaimRetentionPolicy whenDeleted: Delete removes the claims with the StatefulSet', async () => {
      await Promise.all(
        cases.map(async (c) => {
          const name = `${c.scheduler}-gone`;
          const sts = statefulSet(name, c, 1, c.localClass, {
            persistentVolumeClaimRetentionPolicy: { whenScaled: 'Retain', whenDeleted: 'Delete' },
          });
          await api().create(sts);
          await running(name, 1);
          // The controller makes the set the claim's owner in a sync after the one that made it; a set deleted before
          // that leaves the claim behind.
          await waitFor(
            `data-${name}-0 owned by its StatefulSet`,
            async () =>
              (
                await api().get<Pod>('PersistentVolumeClaim', `data-${name}-0`, 'default')
              )?.metadata.ownerReferences?.some((o) => o.kind === 'StatefulSet' && o.name === name),
            WITHIN_MS,
          );
          await api().delete(sts);
          await waitFor(
            `data-${name}-0 deleted with its StatefulSet`,
            async () => !(await api().get('PersistentVolumeClaim', `data-${name}-0`, 'default')),
            WITHIN_MS,
          );
        }),
      );
    });

    test('a pod with no PV anywhere waits, and runs on a node added with new local PVs', async () => {
      await Promise.all(
        cases.map(async (c) => {
          const className = `${c.scheduler}-added`;
          await api().create(created(build.makeStorageClass(className)));
          await api().create(statefulSet(`${c.scheduler}-added`, c, 1, className));
          await waitFor(
            `${c.scheduler}-added-0 unschedulable`,
            async () =>
              (await api().get<Pod>('Pod', `${c.scheduler}-added-0`, 'default'))?.status?.conditions?.some(
                (x) => x.type === 'PodScheduled' && x.status === 'False',
              ),
            WITHIN_MS,
          );
        }),
      );
      await cluster.add(
        ...kwokNode(ADDED, 'zone-c'),
        ...cases.map((c) => localPV(`${c.scheduler}-added-pv`, ADDED, '10Gi', `${c.scheduler}-added`)),
      );
      await Promise.all(
        cases.map(async (c) => {
          const placed = await running(`${c.scheduler}-added`, 1);
          assert.equal(placed.get(`${c.scheduler}-added-0`), ADDED, c.scheduler);
        }),
      );
    });
  });

  test('a Deployment’s pods with a generic ephemeral volume get a claim each after the pod, provisioned in their zone', async () => {
    await Promise.all(
      cases.map(async (c) => {
        const name = `${c.scheduler}-eph`;
        await api().create({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name, namespace: 'default' },
          spec: {
            replicas: 2,
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: {
                schedulerName: c.scheduler,
                containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
                volumes: [
                  {
                    name: 'scratch',
                    ephemeral: {
                      volumeClaimTemplate: {
                        spec: {
                          accessModes: ['ReadWriteOnce'],
                          storageClassName: CSI_CLASS,
                          resources: { requests: { storage: '1Gi' } },
                        },
                      },
                    },
                  },
                ],
              },
            },
          },
        });
        const placed = await running(name, 2);
        for (const [pod, node] of placed) {
          const claim = (await boundClaim(`${pod}-scratch`)) as Claim & {
            metadata: { ownerReferences?: { kind: string; name: string }[] };
          };
          // The ephemeral-volume controller's claim, owned by its pod: deleted with it.
          assert.deepEqual(
            claim.metadata.ownerReferences?.map((o) => [o.kind, o.name]),
            [['Pod', pod]],
          );
          const pv = await api().get<KubeObject & { spec: { nodeAffinity?: unknown } }>(
            'PersistentVolume',
            claim.spec.volumeName ?? '',
          );
          const zone = await zoneOf(node);
          assert.ok(zone, `${node} has a zone`);
          assert.match(JSON.stringify(pv?.spec.nodeAffinity), new RegExp(`"${zone}"`), `${c.scheduler}: ${pod}`);
        }
      }),
    );
  });

  test('a lost node: its pods are evicted, their replacements wait for the local PV’s node and explain says which and since when; back, they run there', async () => {
    await Promise.all(cases.map((c) => api().create(statefulSet(`${c.scheduler}-lost`, c, 1, c.lostClass))));
    await Promise.all(cases.map((c) => running(`${c.scheduler}-lost`, 1)));

    // The kubelet stops answering: KWOK no longer renews the node's lease.
    await api().patch(
      { apiVersion: 'v1', kind: 'Node', metadata: { name: LOST } },
      { metadata: { labels: { [KWOK_NODE_LABEL]: null } } },
    );
    const grace = cluster.plane.nodeLifecycle!;
    const lostWithin = (grace.monitorGracePeriodSeconds + grace.unreachableTolerationSeconds) * 1000 + WITHIN_MS;
    // Taint-based eviction marks each pod terminating; no kubelet confirms it, so it stays until someone does, as in a
    // cluster. The operator force-deletes them (what `kubectl delete pod --force` is) and the controller makes new ones.
    await Promise.all(
      cases.map(async (c) => {
        const pod = `${c.scheduler}-lost-0`;
        const evicted = await waitFor(
          `${pod} evicted from ${LOST}`,
          async () => {
            const p = await api().get<Pod>('Pod', pod, 'default');
            return p?.metadata.deletionTimestamp ? p : undefined;
          },
          lostWithin,
        );
        await api().delete(evicted, 0);
      }),
    );

    await Promise.all(
      cases.map(async (c) => {
        const pod = `${c.scheduler}-lost-0`;
        const scheduled = await waitFor(
          `${pod} made again and found unschedulable`,
          async () => {
            const p = await api().get<Pod>('Pod', pod, 'default');
            if (!p || p.metadata.deletionTimestamp) return undefined;
            const condition = p.status?.conditions?.find((x) => x.type === 'PodScheduled');
            return condition?.status === 'False' ? condition : undefined;
          },
          WITHIN_MS,
        );
        // kube-scheduler's own words: the PV's node affinity (the other nodes) and the taint of the lost one.
        assert.match(scheduled.message ?? '', /didn't match PersistentVolume's node affinity/, c.scheduler);
        assert.match(scheduled.message ?? '', /untolerated taint\(s\)|node\.kubernetes\.io\/unreachable/, c.scheduler);
        const answer = await waitFor(`explain of ${pod}`, async () => {
          const a = await callExtender<{ notes?: string[] }>(cluster.extender, 'POST', '/api/v1/explain', {
            namespace: 'default',
            name: pod,
          });
          return a.status === 200 ? a.body : undefined;
        });
        const note = answer.notes?.find((n) => n.includes(`whose node affinity admits only node "${LOST}"`));
        assert.ok(note, `${c.scheduler}: ${JSON.stringify(answer.notes)}`);
        assert.match(note, /which stopped reporting since \d{4}-\d\d-\d\dT/);
        assert.match(note, /node\.kubernetes\.io\/unreachable/);
        assert.match(note, /bring the node back, or delete the claim/);
      }),
    );

    // The kubelet is back: node life cycle lifts the taints, and each pod is bound beside its volume and runs.
    await api().patch(
      { apiVersion: 'v1', kind: 'Node', metadata: { name: LOST } },
      { metadata: { labels: { [KWOK_NODE_LABEL]: 'fake' } } },
    );
    await Promise.all(
      cases.map(async (c) => {
        const placed = await running(`${c.scheduler}-lost`, 1);
        assert.equal(placed.get(`${c.scheduler}-lost-0`), LOST);
      }),
    );
  });

  test('a node drained (cordon, then the eviction API under a PodDisruptionBudget): its pod waits for its volume’s node and says why, the budget refuses a second eviction, and uncordoned it runs there', async () => {
    const setNode = (unschedulable: boolean) =>
      api().patch({ apiVersion: 'v1', kind: 'Node', metadata: { name: DRAIN } }, { spec: { unschedulable } });
    const evict = (pod: string) =>
      api()
        .client.request('POST', `/api/v1/namespaces/default/pods/${pod}/eviction`, {
          body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: pod, namespace: 'default' } },
        })
        .then(
          () => 201,
          (err) => {
            if (err instanceof KubeApiError) return err.code;
            throw err;
          },
        );
    await Promise.all(
      cases.map(async (c) => {
        const name = `${c.scheduler}-drain`;
        await api().create(statefulSet(name, c, 2, c.drainClass, { podManagementPolicy: 'Parallel' }));
        await api().create({
          apiVersion: 'policy/v1',
          kind: 'PodDisruptionBudget',
          metadata: { name, namespace: 'default' },
          spec: { maxUnavailable: 1, selector: { matchLabels: { app: name } } },
        });
        await running(name, 2);
      }),
    );
    await setNode(true);
    await Promise.all(
      cases.map(async (c) => {
        const name = `${c.scheduler}-drain`;
        const placed = await running(name, 2);
        // One PV of the class is on DRAIN, the other elsewhere: one pod each.
        const onDrain = [...placed.keys()].find((p) => placed.get(p) === DRAIN);
        const other = [...placed.keys()].find((p) => placed.get(p) !== DRAIN);
        assert.ok(onDrain && other, `${c.scheduler}: one pod on ${DRAIN}, one elsewhere: ${[...placed]}`);
        // The eviction API answers 429 until the disruption controller has counted the budget's pods.
        await waitFor(`${name}'s budget allows a disruption`, async () => {
          const pdb = await api().get<KubeObject & { status?: { disruptionsAllowed?: number } }>(
            'policy/v1/PodDisruptionBudget',
            name,
            'default',
          );
          return pdb?.status?.disruptionsAllowed === 1;
        });
        const uid = (await api().get('Pod', onDrain, 'default'))?.metadata.uid;
        assert.equal(await evict(onDrain), 201, `${c.scheduler}: evicting ${onDrain}`);
        assert.equal(await evict(other), 429, `${c.scheduler}: the budget refuses ${other} while ${onDrain} is down`);
        const scheduled = await waitFor(
          `${onDrain} made again and found unschedulable`,
          async () => {
            const p = await api().get<Pod>('Pod', onDrain, 'default');
            if (!p || p.metadata.uid === uid || p.metadata.deletionTimestamp) return undefined;
            const condition = p.status?.conditions?.find((x) => x.type === 'PodScheduled');
            return condition?.status === 'False' ? condition : undefined;
          },
          WITHIN_MS,
        );
        assert.match(scheduled.message ?? '', /1 node\(s\) were unschedulable/, c.scheduler);
        assert.match(scheduled.message ?? '', /node\(s\) didn't match PersistentVolume's node affinity/, c.scheduler);
      }),
    );
    await setNode(false);
    await Promise.all(
      cases.map(async (c) => {
        const placed = await running(`${c.scheduler}-drain`, 2);
        assert.ok([...placed.values()].includes(DRAIN), `${c.scheduler}: back on ${DRAIN}`);
      }),
    );
  });
}
