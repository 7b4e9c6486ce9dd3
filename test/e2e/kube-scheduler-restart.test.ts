// A restart of the extender while a real kube-scheduler keeps scheduling (issue 21). Pods created before the restart,
// just before it (in flight when the extender goes), while it is down (kube-scheduler's calls are refused: with
// ignorable: false each attempt fails and the pod is retried after its backoff) and after it all end up bound, each
// claim on a PV of its pod's node and no PV given twice. The PVs are exactly as many as the pods, so a claim bound
// twice or a PV the restarted extender thought free would leave a pod without one. The restarted extender listens
// before it has listed the cluster; its lists are held (by the API proxy in front of the real kube-apiserver) until
// kube-scheduler has called it, and what it answers then must be an error (the attempt is retried after backoff),
// never a verdict from an empty view. A pod bound in flight by our bind has its claims finished by the real PV
// controller, which binds a claim our bind wrote a claimRef for even when the extender is gone.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../cluster/kube/helpers.ts';
import { type ExtenderRegistration, type KubeSchedulerBinary, kubeSchedulers } from './kube-scheduler.ts';
import {
  claim,
  clusterNode,
  clusterObjects,
  LOCAL_CLASS,
  localPV,
  pendingPod,
  type SchedulerCluster,
  startSchedulerCluster,
} from './scheduler-cluster.ts';

const found = await kubeSchedulers();
const CASE_LABEL = 'e2e-restart-case';
const PHASES = ['before', 'racing', 'down', 'after'] as const;
type Phase = (typeof PHASES)[number];
const PODS_PER_PHASE = 2;
const NODES = 2;

interface Case {
  id: string;
  scheduler: string;
  binary: KubeSchedulerBinary;
  registration: Omit<ExtenderRegistration, 'url'>;
}

/** Every kube-scheduler fully delegated, the newest (the first) also filter-only. */
function casesOf(binaries: KubeSchedulerBinary[]): Case[] {
  return binaries.flatMap((binary, index) => {
    const v = binary.version.replaceAll('.', '-');
    const modes = index === 0 ? (['delegated', 'scheduler-binds'] as const) : (['delegated'] as const);
    return modes.map((mode) => {
      const id = `${v}-${mode === 'delegated' ? 'delegated' : 'binds'}`;
      return { id, scheduler: `e2e-restart-${id}`, binary, registration: { mode, nodeCacheCapable: true } };
    });
  });
}

const nodeOf = (c: Case, i: number) => `${c.id}-n${i}`;

/** The case's nodes, each with room for an equal share of its pods' claims: one PV per pod, no more. */
function caseObjects(c: Case) {
  const perNode = (PHASES.length * PODS_PER_PHASE) / NODES;
  return Array.from({ length: NODES }, (_, i) => [
    ...clusterNode(nodeOf(c, i), 'zone-a', { [CASE_LABEL]: c.id }),
    ...Array.from({ length: perNode }, (_, j) => localPV(`${nodeOf(c, i)}-pv${j}`, nodeOf(c, i), '10Gi')),
  ]).flat();
}

/** Creates the phase's pods, each with its own local claim; returns their names. */
async function createPods(cluster: SchedulerCluster, c: Case, phase: Phase): Promise<string[]> {
  const names = Array.from({ length: PODS_PER_PHASE }, (_, i) => `${c.id}-${phase}-${i}`);
  for (const name of names) {
    await cluster.add(
      claim(`${name}-data`, LOCAL_CLASS, '5Gi'),
      pendingPod(name, c.scheduler, { claims: [`${name}-data`], nodeSelector: { [CASE_LABEL]: c.id } }),
    );
  }
  return names;
}

type Volume = { spec: { claimRef?: { name: string } } };

if (found.skip) {
  test('a restart of the extender while a real kube-scheduler schedules', { skip: found.skip }, () => {});
} else {
  const cases = casesOf(found.binaries);
  let cluster: SchedulerCluster;
  before(async () => {
    cluster = await startSchedulerCluster([...clusterObjects(0), ...cases.flatMap(caseObjects)]);
    await Promise.all(cases.map((c) => cluster.scheduler(c.binary, c.scheduler, c.registration)));
  });
  after(() => cluster?.stop());

  describe('a restart of the extender while kube-scheduler keeps scheduling', () => {
    test(`pods created before, during and after the restart are all bound, each claim on its pod's node, no PV twice (${cases.map((c) => `${c.binary.version} ${c.registration.mode}`).join(', ')})`, async () => {
      const { api, proxy, recorder } = cluster;
      const pods = new Map<Phase, string[]>(PHASES.map((p) => [p, []]));
      const add = async (phase: Phase) => {
        for (const names of await Promise.all(cases.map((c) => createPods(cluster, c, phase)))) {
          pods.get(phase)!.push(...names);
        }
      };
      const nodeName = async (pod: string) =>
        ((await api.get('Pod', pod, 'default'))?.spec as { nodeName?: string } | undefined)?.nodeName;

      await add('before');
      await Promise.all(pods.get('before')!.map((p) => cluster.boundNode(p)));

      // Pods the extender may be filtering or binding when it goes: whatever it was doing is undone or finished.
      await add('racing');
      await waitFor('the racing pods reached the extender', () =>
        pods.get('racing')!.every((p) => recorder.callsFor(`default/${p}`).length > 0),
      );
      await cluster.stopExtender();

      await add('down');
      await waitFor('kube-scheduler tried every pod created while the extender was down, and was refused', () =>
        pods.get('down')!.every((p) => recorder.callsFor(`default/${p}`).some((call) => call.status === 0)),
      );
      for (const p of pods.get('down')!) {
        assert.equal(await nodeName(p), undefined, `${p} stays pending while we are down`);
      }

      // The new extender listens before it has listed the cluster: its lists are held until kube-scheduler has
      // retried a pod against it, and every verb it answered meanwhile must be an error, not a verdict.
      const release = proxy.hold((r) => !!r.userAgent?.startsWith('topology-extender/') && !r.watch);
      const restarted = recorder.calls.length;
      await cluster.startExtender({ ready: false });
      await waitFor('kube-scheduler retried a pod against the unsynced extender', () =>
        recorder.calls.slice(restarted).some((call) => call.status === 503),
      );
      const unsynced = recorder.calls.slice(restarted).filter((call) => call.done && call.status !== 0);
      release();
      assert.deepEqual(new Set(unsynced.map((call) => call.status)), new Set([503]), 'only errors before the lists');
      await add('after');

      const all = PHASES.flatMap((p) => pods.get(p)!);
      await Promise.all(all.map((p) => cluster.boundNode(p)));
      const byPV = new Map<string, string>();
      for (const p of all) {
        const volumeName = await waitFor(
          `${p}'s claim bound`,
          async () =>
            (
              (await api.get('PersistentVolumeClaim', `${p}-data`, 'default'))?.spec as
                | { volumeName?: string }
                | undefined
            )?.volumeName,
        );
        assert.equal(byPV.get(volumeName), undefined, `${volumeName} given to ${p} and ${byPV.get(volumeName)}`);
        byPV.set(volumeName, p);
        const pv = (await api.get('PersistentVolume', volumeName)) as unknown as Volume;
        assert.equal(pv.spec.claimRef?.name, `${p}-data`, `${volumeName} names ${p}'s claim`);
        const node = await nodeName(p);
        assert.ok(volumeName.startsWith(`${node}-pv`), `${p} on ${node} with ${volumeName}`);
      }
      assert.equal(byPV.size, all.length);
      const fromEmptyView = recorder.calls.filter((call) =>
        JSON.stringify(call.answer ?? null).includes('not in the extender'),
      );
      assert.deepEqual(fromEmptyView, [], 'no verdict from an empty view');
    });
  });
}
