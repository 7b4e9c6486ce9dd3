// Preemption with a real kube-scheduler, where its own dry run would evict on the wrong node (issue 21; issue 24
// item 2). A high-priority pod needs CPU that only an eviction frees, on node X or node Y, and a local PV that exists
// only on X. The victim on Y is the cheaper one (lower priority), so kube-scheduler alone picks Y: with full
// delegation its VolumeBinding is off and its dry run cannot see that the pod would then still have no PV. Our preempt
// verb drops Y, so the victim evicted is on X, the pod is nominated to X and bound there once the victim is gone.
// Each case has its own pair of nodes (the pod's nodeSelector keeps every other node out of its preemption) and its own
// kube-scheduler, so the cases run concurrently on one cluster (a real control plane: startSchedulerCluster).
// What kube-scheduler wrote is read as users and the API server see it: each version of the pods, from a watch opened
// before any preemptor exists (every write is one event, in order), and who wrote what, from the API server's audit log
// (cluster.writes(), metadata only: no bodies).
import assert from 'node:assert/strict';
import { after, before, describe, type TestContext, test } from 'node:test';
import { waitFor } from '../cluster/kube/helpers.ts';
import type { KubeObject } from '../components/kube-api.ts';
import {
  type ExtenderRegistration,
  type KubeSchedulerBinary,
  type KubeSchedulerProcess,
  kubeSchedulers,
} from './kube-scheduler.ts';
import {
  type ApiWrite,
  claim,
  clusterNode,
  clusterObjects,
  LOCAL_CLASS,
  localPV,
  pendingPod,
  runningPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();
/** The newest kube-scheduler runs every registration; the others the chart's default (delegated, node cache). */
const NEWEST = found.binaries[0]?.version;
const CASE_LABEL = 'e2e-preemption-case';
// kubernetes#141694 (open): a retry that starts before the victim's deletion reaches kube-scheduler's cache preempts the
// same, already deleted victim again; that second preemption emits no event and the preemptor waits for the periodic
// flush of unschedulable pods (every 30 s, after this long there). Seen with v1.34.7 against the imitation, where
// victims went at once; on the real control plane v1.35.4, v1.36.3 and v1.37.2 all still log it now and then (a
// victim's status patch and deletion take 0.7-2 s there on a busy machine, and the retry comes first).
const UNSTICK = ['--pod-max-in-unschedulable-pods-duration=1s'];
// When that second preemption leaves the preemptor gated ("waiting for the preemption for this pod to be finished"),
// no flush moves it: v1.34 and v1.35 skip gated pods (kubernetes#139162, fixed in 1.36), and nothing but a restart of
// kube-scheduler schedules it again. Seen with v1.34.7 (no attempt in the 60 s after "Victim Pod is already deleted");
// not seen yet on the real control plane, where every preemptor that met the bug was bound within a second (v1.35.4
// included). The case then restarts its kube-scheduler, as an operator would, and says so; what is asserted holds
// either way.
const STRANDED_FOR_MS = 10_000;
const SIGNATURE = 'Victim Pod is already deleted';

interface Case {
  id: string;
  binary: KubeSchedulerBinary;
  registration: Omit<ExtenderRegistration, 'url'>;
  /** Registered without the preempt verb: kube-scheduler's dry run alone decides (the control). */
  withoutPreempt?: boolean;
}

function casesOf(binaries: KubeSchedulerBinary[]): Case[] {
  const cases: Case[] = [];
  for (const binary of binaries) {
    const v = binary.version.replaceAll('.', '-');
    const core = { mode: 'delegated', nodeCacheCapable: true } as const;
    cases.push({ id: `${v}-delegated-cache`, binary, registration: core });
    if (binary.version !== NEWEST) continue;
    cases.push(
      { id: `${v}-delegated-full`, binary, registration: { mode: 'delegated', nodeCacheCapable: false } },
      { id: `${v}-binds-cache`, binary, registration: { mode: 'scheduler-binds', nodeCacheCapable: true } },
      {
        id: `${v}-no-preempt`,
        binary,
        registration: { ...core, verbs: { filter: 'filter', prioritize: 'prioritize', bind: 'bind' } },
        withoutPreempt: true,
      },
    );
  }
  return cases;
}

/** The case's objects: X and Y full of lower-priority pods (Y's cheaper to evict), a PV on X only, the pod's claim. */
function scenario(id: string) {
  const [x, y] = [`${id}-x`, `${id}-y`];
  const names = { x, y, onX: `${id}-victim-x`, onY: `${id}-victim-y`, pod: `${id}-pod`, claim: `${id}-data` };
  const objects = [
    ...clusterNode(x, 'zone-a', { [CASE_LABEL]: id }),
    ...clusterNode(y, 'zone-b', { [CASE_LABEL]: id }),
    // 7 of 8 CPUs taken on each; the pod asks for 6.
    runningPod(names.onX, x, { priority: 100, cpu: '7' }),
    runningPod(names.onY, y, { priority: 10, cpu: '7' }),
    localPV(`${id}-pv-x`, x, '10Gi'),
    claim(names.claim, LOCAL_CLASS, '5Gi'),
  ];
  return { names, objects };
}

const podPath = (name: string) => `/api/v1/namespaces/default/pods/${name}`;

type Pod = KubeObject & {
  metadata: { uid: string; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status?: { nominatedNodeName?: string; conditions?: { type: string; status: string; reason?: string }[] };
};

/** Every version of every pod in `default` a watch delivered (type and object), per pod name, in order. */
class PodHistory {
  readonly versions = new Map<string, { type: string; pod: Pod }[]>();
  stop: () => void = () => {};

  record(type: string, pod: Pod) {
    if (pod.metadata.namespace !== 'default') return;
    const list = this.versions.get(pod.metadata.name) ?? [];
    list.push({ type, pod });
    this.versions.set(pod.metadata.name, list);
  }

  of(name: string) {
    return this.versions.get(name) ?? [];
  }

  /** The nominatedNodeName values the pod carried, in order, each change once. */
  nominations(name: string): string[] {
    const seen: string[] = [];
    for (const { pod } of this.of(name)) {
      const nominated = pod.status?.nominatedNodeName;
      if (nominated && seen.at(-1) !== nominated) seen.push(nominated);
    }
    return seen;
  }
}

/** Index of the first write matching, -1 if none. */
function writeIndex(writes: ApiWrite[], user: string, method: string, path: string) {
  return writes.findIndex((w) => w.user === user && w.method === method && w.path === path && w.status < 300);
}

const isDisruption = (c: { type: string; reason?: string }) =>
  c.type === 'DisruptionTarget' && c.reason === 'PreemptionByScheduler';

if (found.skip) {
  test('preemption with a real kube-scheduler', { skip: found.skip }, () => {});
} else {
  const cases = casesOf(found.binaries);
  const scenarios = new Map(cases.map((c) => [c.id, scenario(c.id)]));
  let cluster: SchedulerCluster;
  const history = new PodHistory();
  const schedulers = new Map<string, KubeSchedulerProcess>();
  /** Each case's kube-scheduler logs, the restarted ones' included. */
  const logs = new Map<string, (() => string)[]>();
  const startScheduler = async (c: Case) => {
    const ks = await cluster.scheduler(c.binary, `e2e-preemption-${c.id}`, c.registration, UNSTICK);
    schedulers.set(c.id, ks);
    logs.set(c.id, [...(logs.get(c.id) ?? []), () => ks.log()]);
    return ks;
  };
  const podOf = (name: string) => cluster.api.get<Pod>('Pod', name, 'default');

  /** The preemptor's node once bound, restarting the case's kube-scheduler once if kubernetes#141694 stranded it. */
  const boundPreemptor = async (t: TestContext, c: Case, pod: string): Promise<string> => {
    const signature = `"${SIGNATURE}" preemptor="default/${pod}"`;
    let strandedSince: number | undefined;
    let restarted = false;
    try {
      return await waitFor(
        `pod ${pod} bound`,
        async () => {
          const node = (await podOf(pod))?.spec.nodeName;
          if (node || restarted) return node;
          const ks = schedulers.get(c.id)!;
          strandedSince ??= ks.log().includes(signature) ? Date.now() : undefined;
          if (strandedSince !== undefined && Date.now() - strandedSince > STRANDED_FOR_MS) {
            restarted = true;
            t.diagnostic(`kubernetes#141694 stranded ${pod} (${c.binary.version}): restarting its kube-scheduler`);
            await ks.stop();
            await startScheduler(c);
          }
          return undefined;
        },
        90_000,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${cluster.whyNotBound(pod)}`);
    }
  };

  before(async () => {
    cluster = await startSchedulerCluster([...clusterObjects(0), ...[...scenarios.values()].flatMap((s) => s.objects)]);
    history.stop = await cluster.api.watch<Pod>('Pod', (type, pod) => history.record(type, pod));
    await Promise.all(cases.map((c) => startScheduler(c)));
  });
  after(async () => {
    history.stop();
    await cluster?.stop();
  });

  describe('preemption where kube-scheduler alone would evict on the wrong node', { concurrency: true }, () => {
    for (const c of cases) {
      const { names } = scenarios.get(c.id)!;
      const { mode, nodeCacheCapable } = c.registration;
      const label = `${c.binary.version} ${mode} nodeCacheCapable=${nodeCacheCapable}`;
      /** Says whether kubernetes#141694's signature showed in this case (a finding per version, not a failure). */
      const report141694 = (t: TestContext) => {
        const times = (logs.get(c.id) ?? []).reduce(
          (n, log) => n + log().split(`"${SIGNATURE}" preemptor="default/${names.pod}"`).length - 1,
          0,
        );
        if (times > 0)
          t.diagnostic(`kubernetes#141694: "${SIGNATURE}" logged ${times}x for ${names.pod} (${c.binary.version})`);
      };

      if (c.withoutPreempt) {
        test(`${label}, registered without the preempt verb: kube-scheduler's own dry run evicts on the node without the PV`, async (t) => {
          await cluster.add(
            pendingPod(names.pod, `e2e-preemption-${c.id}`, { ...preemptor(c.id), claims: [names.claim] }),
          );
          await waitFor(`${names.onY} evicted`, async () => !(await podOf(names.onY)), 60_000);
          // The nomination is written beside the eviction (asynchronous preemption): it may come after it.
          const [first] = await waitFor(`${names.pod} nominated`, () => {
            const written = history.nominations(names.pod);
            return written.length > 0 ? written : undefined;
          });
          assert.equal(first, names.y, 'nominated to Y');
          assert.deepEqual(cluster.recorder.callsFor(`default/${names.pod}`, 'preempt'), []);
          report141694(t);
        });
        continue;
      }

      test(`${label}: our preempt answer moves the eviction to the node with the PV, where the pod is then bound`, async (t) => {
        const uid = async (name: string) => (await podOf(name))!.metadata.uid;
        const [onX, onY] = [await uid(names.onX), await uid(names.onY)];
        // Writes from here on: the victims' own creation (their status, as a kubelet would write it) came before.
        const since = (await cluster.writes()).length;
        await cluster.add(
          pendingPod(names.pod, `e2e-preemption-${c.id}`, { ...preemptor(c.id), claims: [names.claim] }),
        );
        assert.equal(await boundPreemptor(t, c, names.pod), names.x);
        report141694(t);

        // What kube-scheduler asked and what we answered. It may ask twice: a retry that comes before the victim's
        // deletion reaches its cache preempts the same victim again (kubernetes#141694; the second eviction finds the
        // pod gone), and gets the same answer.
        const preempts = cluster.recorder.callsFor(`default/${names.pod}`, 'preempt');
        assert.ok(preempts.length >= 1, 'kube-scheduler called preempt');
        for (const preempt of preempts) {
          assert.equal(preempt.status, 200);
          assert.deepEqual(
            preempt.victims,
            mode === 'delegated'
              ? { [names.x]: [onX], [names.y]: [onY] } // its dry run does not see volumes: Y is a candidate
              : { [names.x]: [onX] }, // its own VolumeBinding already ruled Y out
            'the candidates kube-scheduler sent',
          );
          assert.deepEqual(
            preempt.answer,
            { NodeNameToMetaVictims: { [names.x]: { Pods: [{ UID: onX }], NumPDBViolations: 0 } } },
            'our answer keeps X with its victim',
          );
        }

        // The eviction, as the audit log has it: kube-scheduler patched the victim's status, then deleted it.
        const writes = (await cluster.writes()).slice(since);
        const scheduler = 'system:kube-scheduler';
        const disruption = writeIndex(writes, scheduler, 'PATCH', `${podPath(names.onX)}/status`);
        const deletion = writeIndex(writes, scheduler, 'DELETE', podPath(names.onX));
        assert.ok(disruption >= 0, "kube-scheduler patched the victim's status");
        assert.ok(deletion > disruption, 'the victim deleted after its status patch');
        // And as watchers saw it: the victim carried DisruptionTarget (PreemptionByScheduler) before it was deleted.
        const victim = history.of(names.onX).map((v) => v.pod);
        assert.ok(
          victim.some((p) => !p.metadata.deletionTimestamp && (p.status?.conditions ?? []).some(isDisruption)),
          'DisruptionTarget applied to the victim before it was terminating',
        );
        assert.deepEqual(new Set(history.nominations(names.pod)), new Set([names.x]), 'nominated to X, never to Y');

        // The end state: the victim on Y untouched, the claim bound to the PV on X (by the real PV controller).
        await waitFor(`${names.onX} gone`, async () => !(await podOf(names.onX)));
        assert.ok(await podOf(names.onY), 'the pod on Y still runs');
        assert.deepEqual(
          (await cluster.writes()).slice(since).filter((w) => w.path.startsWith(podPath(names.onY))),
          [],
          'nothing written to the pod on Y',
        );
        const bound = await waitFor(`${names.claim} bound`, async () => {
          const pvc = await cluster.api.get('PersistentVolumeClaim', names.claim, 'default');
          return (pvc?.status as { phase?: string } | undefined)?.phase === 'Bound' ? pvc : undefined;
        });
        assert.equal((bound.spec as { volumeName?: string }).volumeName, `${c.id}-pv-x`);
        const pv = (await cluster.api.get('PersistentVolume', `${c.id}-pv-x`))!;
        assert.equal((pv.spec as { claimRef?: { name: string } }).claimRef?.name, names.claim);
      });
    }
  });
}

function preemptor(id: string) {
  return { priority: 1000, cpu: '6', nodeSelector: { [CASE_LABEL]: id } };
}
