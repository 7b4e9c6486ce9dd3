// Several writers of one cluster: the claim is the point of conflict (a hold written before the PV's claimRef), and a
// bind never waits its way into a Binding when another writer's PV won the claim.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/cluster/types.ts';
import { WriteError } from '../../src/cluster/writer.ts';
import type { PodVolumes } from '../../src/volumes/binder.ts';
import { ANN_SELECTED_VOLUME, claimHold, HOLD_SECONDS, holdValue, ServedHolds } from '../../src/volumes/claim-hold.ts';
import { ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER } from '../../src/volumes/constants.ts';
import { SETTLED_SECONDS } from '../../src/volumes/pv-controller-view.ts';
import { bindVolumeToClaim } from '../../src/volumes/pv-matching.ts';
import { ClusterVolumeBinder } from '../../src/volumes/volume-binder.ts';
import { makeNode, makePod, makePV, makePVC, makeStorageClass } from '../helpers/objects.ts';
import { TestCluster } from './fixtures.ts';

const NOW = Date.parse('2025-06-01T12:00:00Z');
const localPV = (name: string, node: string) =>
  makePV(name, { className: 'wait-sc', size: '10Gi', affinity: { 'kubernetes.io/hostname': [node] } });
const claim = (annotations?: Record<string, string>) =>
  makePVC('data', { className: 'wait-sc', size: '1Gi', ...(annotations ? { annotations } : {}) });

function setup(pvc: PersistentVolumeClaim = claim()) {
  const pod = makePod('web', { claims: ['data'] });
  const cluster = new TestCluster([
    makeStorageClass('wait-sc'),
    makeNode('node-a'),
    makeNode('node-b'),
    localPV('pv-a', 'node-a'),
    localPV('pv-b', 'node-b'),
    pvc,
    pod,
  ]);
  return { cluster, pod };
}

/** The binding of the store's claim to `pvName`, as reserve assumes it. */
function binding(cluster: TestCluster, pvName: string): PodVolumes {
  const pvc = cluster.store.get('PersistentVolumeClaim', 'default/data')!;
  const pv = bindVolumeToClaim(cluster.store.get('PersistentVolume', pvName)!, pvc).pv;
  return { staticBindings: [{ pvc, pv }], dynamicProvisions: [] };
}

/** The PV controller's status writes (Pending, then Available) after the binder started watching. */
function controllerMadeAvailable(cluster: TestCluster, pvName: string): void {
  for (const phase of ['Pending', 'Available'])
    cluster.add({ ...cluster.store.get('PersistentVolume', pvName)!, status: { phase } });
}

/** A binder whose clock (the time holds are written and judged at) stands at `now`. */
function binderAt(cluster: TestCluster, now: number): ClusterVolumeBinder {
  return new ClusterVolumeBinder({
    store: cluster.store,
    writer: cluster.writer,
    bindTimeoutSeconds: 5,
    now: () => now,
  });
}

describe('claim holds', () => {
  it('a hold names the PV and the time it was written; anything else is no hold', () => {
    assert.deepEqual(claimHold(claim({ [ANN_SELECTED_VOLUME]: holdValue('pv-a', NOW) })), { pv: 'pv-a', at: NOW });
    assert.equal(claimHold(claim({ [ANN_SELECTED_VOLUME]: '' })), undefined, 'released');
    assert.equal(claimHold(claim({ [ANN_SELECTED_VOLUME]: 'pv-a' })), undefined, 'no time');
    assert.equal(claimHold(claim()), undefined);
  });

  it('the claim is held before its PV is written, conditional on the version read', async () => {
    const { cluster } = setup();
    const binder = binderAt(cluster, NOW);
    const holds: (string | undefined)[] = [];
    const write = cluster.writer.updatePersistentVolumeClaim;
    cluster.writer.updatePersistentVolumeClaim = (pvc: PersistentVolumeClaim) => {
      holds.push(pvc.metadata.annotations?.[ANN_SELECTED_VOLUME]);
      return write.call(cluster.writer, pvc);
    };
    await binder.bindAPIUpdate(binding(cluster, 'pv-a'));
    assert.deepEqual(cluster.writer.updates, ['default/data', 'pv-a', 'default/data'], 'hold, PV, claim half');
    assert.deepEqual(holds, [holdValue('pv-a', NOW), undefined], 'the hold, then the claim half without it');
  });

  it('once its PV names it, the claim is bound from its side as the PV controller would, and the hold dropped', async () => {
    const { cluster } = setup();
    await binderAt(cluster, NOW).bindAPIUpdate(binding(cluster, 'pv-a'));
    const pvc = cluster.store.get('PersistentVolumeClaim', 'default/data')!;
    assert.equal(pvc.spec.volumeName, 'pv-a');
    assert.deepEqual(
      pvc.metadata.annotations,
      { [ANN_BOUND_BY_CONTROLLER]: 'yes' },
      "bind-completed stays the controller's: a PV just listed, which its informer may not show as we do",
    );
  });

  it("the claim half carries bind-completed once the controller's own write of the PV followed its claimRef", async () => {
    const { cluster } = setup();
    const binder = binderAt(cluster, NOW);
    controllerMadeAvailable(cluster, 'pv-a');
    await binder.bindAPIUpdate(binding(cluster, 'pv-a'));
    assert.deepEqual(cluster.writer.updates, ['default/data', 'pv-a', 'default/data'], 'hold, PV, claim half');
    const pvc = cluster.store.get('PersistentVolumeClaim', 'default/data')!;
    assert.equal(pvc.spec.volumeName, 'pv-a');
    assert.deepEqual(pvc.metadata.annotations, {
      [ANN_BOUND_BY_CONTROLLER]: 'yes',
      [ANN_BIND_COMPLETED]: 'yes',
    });
  });

  it('so does a PV our watch has shown unchanged for SETTLED_SECONDS, but not one freed since', async () => {
    const settled = setup();
    const clock = { now: NOW };
    const binder = new ClusterVolumeBinder({
      store: settled.cluster.store,
      writer: settled.cluster.writer,
      bindTimeoutSeconds: 5,
      now: () => clock.now,
    });
    // pv-b: prebound to another claim, then freed by someone other than the PV controller (phase unchanged).
    const pvB = settled.cluster.store.get('PersistentVolume', 'pv-b')!;
    settled.cluster.add({ ...pvB, spec: { ...pvB.spec, claimRef: { namespace: 'default', name: 'x', uid: 'x' } } });
    clock.now = NOW + SETTLED_SECONDS * 1000;
    settled.cluster.add({ ...settled.cluster.store.get('PersistentVolume', 'pv-b')!, spec: pvB.spec });
    await binder.bindAPIUpdate(binding(settled.cluster, 'pv-a'));
    const annotations = () => settled.cluster.store.get('PersistentVolumeClaim', 'default/data')!.metadata.annotations;
    assert.equal(annotations()?.[ANN_BIND_COMPLETED], 'yes', 'pv-a, listed SETTLED_SECONDS ago');

    const freed = setup();
    const pvBFreed = freed.cluster.store.get('PersistentVolume', 'pv-b')!;
    const freedBinder = new ClusterVolumeBinder({
      store: freed.cluster.store,
      writer: freed.cluster.writer,
      bindTimeoutSeconds: 5,
      now: () => clock.now,
    });
    clock.now += SETTLED_SECONDS * 1000;
    freed.cluster.add({
      ...pvBFreed,
      spec: { ...pvBFreed.spec, claimRef: { namespace: 'default', name: 'x', uid: 'x' } },
    });
    freed.cluster.add({ ...freed.cluster.store.get('PersistentVolume', 'pv-b')!, spec: pvBFreed.spec });
    await freedBinder.bindAPIUpdate(binding(freed.cluster, 'pv-b'));
    const pvc = freed.cluster.store.get('PersistentVolumeClaim', 'default/data')!;
    assert.equal(pvc.spec.volumeName, 'pv-b');
    assert.equal(pvc.metadata.annotations?.[ANN_BIND_COMPLETED], undefined, 'pv-b, freed just now');
  });

  it('a claim half that conflicts with an unrelated change (its status) is written again on the claim read back', async () => {
    const { cluster } = setup();
    const binder = binderAt(cluster, NOW);
    const writePV = cluster.writer.updatePersistentVolume;
    cluster.writer.updatePersistentVolume = async (pv: PersistentVolume) => {
      const out = await writePV.call(cluster.writer, pv);
      const pvc = cluster.store.get('PersistentVolumeClaim', 'default/data')!;
      cluster.add({ ...pvc, status: { phase: 'Pending' } });
      return out;
    };
    await binder.bindAPIUpdate(binding(cluster, 'pv-a'));
    assert.deepEqual(cluster.writer.updates, ['default/data', 'pv-a', 'default/data', 'default/data']);
    assert.equal(cluster.store.get('PersistentVolumeClaim', 'default/data')!.spec.volumeName, 'pv-a');
  });

  it('a live hold for another PV: the bind steps back with 409 and writes nothing', async () => {
    const { cluster } = setup(claim({ [ANN_SELECTED_VOLUME]: holdValue('pv-b', NOW - 1000) }));
    const binder = binderAt(cluster, NOW);
    await assert.rejects(binder.bindAPIUpdate(binding(cluster, 'pv-a')), (err: WriteError) => {
      assert.equal(err.code, 409);
      assert.match(err.message, /claim "default\/data" is held for volume "pv-b" by another bind/);
      return true;
    });
    assert.deepEqual(cluster.writer.updates, []);
    assert.equal(binder.pvCache.get('pv-a')?.spec.claimRef, undefined, 'the assumption is restored');
  });

  it('an expired hold, or one whose PV went to another claim, no longer blocks', async () => {
    const expired = setup(claim({ [ANN_SELECTED_VOLUME]: holdValue('pv-b', NOW - (HOLD_SECONDS + 1) * 1000) }));
    await binderAt(expired.cluster, NOW).bindAPIUpdate(binding(expired.cluster, 'pv-a'));
    assert.deepEqual(expired.cluster.writer.updates, ['default/data', 'pv-a', 'default/data']);

    const lost = setup(claim({ [ANN_SELECTED_VOLUME]: holdValue('pv-b', NOW) }));
    const pvB = lost.cluster.store.get('PersistentVolume', 'pv-b')!;
    lost.cluster.add({ ...pvB, spec: { ...pvB.spec, claimRef: { namespace: 'default', name: 'other', uid: 'x' } } });
    await binderAt(lost.cluster, NOW).bindAPIUpdate(binding(lost.cluster, 'pv-a'));
    assert.deepEqual(lost.cluster.writer.updates, ['default/data', 'pv-a', 'default/data']);
  });

  it('two writers read the same claim version: the loser gets 409, reads the claim back and writes no PV', async () => {
    const { cluster } = setup();
    const binder = binderAt(cluster, NOW);
    const volumes = binding(cluster, 'pv-a');
    // The other writer won the claim for pv-b; this process's watch has not delivered it yet.
    const winner = claim({ [ANN_SELECTED_VOLUME]: holdValue('pv-b', NOW) });
    cluster.writer.updatePersistentVolumeClaim = async () => {
      throw new WriteError(409, 'Conflict', 'the object has been modified');
    };
    cluster.writer.getPersistentVolumeClaim = async () => winner;
    const writePV = cluster.writer.updatePersistentVolume;
    let pvWrites = 0;
    cluster.writer.updatePersistentVolume = (pv: PersistentVolume) => {
      pvWrites++;
      return writePV.call(cluster.writer, pv);
    };
    await assert.rejects(binder.bindAPIUpdate(volumes), /held for volume "pv-b"/);
    assert.equal(pvWrites, 0);
  });

  it('a PV write that conflicts with the same claim already prebound is taken as written', async () => {
    const { cluster } = setup();
    const binder = binderAt(cluster, NOW);
    const volumes = binding(cluster, 'pv-a');
    // Another bind of the same claim wrote the same PV first.
    cluster.add(volumes.staticBindings[0].pv);
    const written = await binder.bindAPIUpdate(volumes);
    assert.equal(written.staticBindings[0].pv.spec.claimRef?.name, 'data');
  });

  it('... but its claim half leaves bind-completed to the controller: the version that write was based on is unknown', async () => {
    const { cluster } = setup();
    const binder = binderAt(cluster, NOW);
    controllerMadeAvailable(cluster, 'pv-a');
    const volumes = binding(cluster, 'pv-a');
    // Our watch shows the version the controller wrote; the other bind's write is not delivered yet.
    const theirs = volumes.staticBindings[0].pv;
    cluster.writer.updatePersistentVolume = async () => {
      throw new WriteError(409, 'Conflict', 'the object has been modified');
    };
    cluster.writer.getPersistentVolume = async () => ({
      ...theirs,
      metadata: { ...theirs.metadata, resourceVersion: cluster.nextRV() },
    });
    const written = await binder.bindAPIUpdate(volumes);
    assert.equal(written.staticBindings[0].pvc.spec.volumeName, 'pv-a');
    assert.equal(written.staticBindings[0].pvc.metadata.annotations?.[ANN_BIND_COMPLETED], undefined);
  });
});

describe('a bind whose claim another writer bound', () => {
  it('fails before the Binding and unbinds the PV it wrote', async () => {
    const { cluster, pod } = setup();
    const binder = binderAt(cluster, NOW);
    const volumes = binding(cluster, 'pv-a');
    // Between this bind's PV write and its claim half, another writer's PV for the same claim (pv-b) is what the PV
    // controller bound (a writer whose hold expired).
    const writePV = cluster.writer.updatePersistentVolume;
    cluster.writer.updatePersistentVolume = async (pv: PersistentVolume) => {
      const out = await writePV.call(cluster.writer, pv);
      const pvB = cluster.store.get('PersistentVolume', 'pv-b')!;
      const pvc = cluster.store.get('PersistentVolumeClaim', 'default/data')!;
      cluster.add(bindVolumeToClaim(pvB, pvc).pv);
      cluster.add({
        ...pvc,
        spec: { ...pvc.spec, volumeName: 'pv-b' },
        metadata: { ...pvc.metadata, annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } },
      });
      return out;
    };
    await assert.rejects(
      binder.bindPodVolumes(pod, 'node-a', volumes),
      /claim "default\/data" is bound to volume "pv-b", not "pv-a"/,
    );
    const pvA = cluster.store.get('PersistentVolume', 'pv-a')!;
    assert.equal(pvA.spec.claimRef, undefined, 'the losing PV is free again');
    assert.equal(pvA.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'], undefined);
  });

  it('a claim already bound to another PV: the hold step-back answers before any write', async () => {
    const { cluster } = setup();
    const binder = binderAt(cluster, NOW);
    const volumes = binding(cluster, 'pv-a');
    const pvc = cluster.store.get('PersistentVolumeClaim', 'default/data')!;
    cluster.add({ ...pvc, spec: { ...pvc.spec, volumeName: 'pv-b' } });
    await assert.rejects(binder.bindAPIUpdate(volumes), /bound to volume "pv-b", not "pv-a"/);
    assert.deepEqual(cluster.writer.updates, []);
  });
});

describe('a hold that has served', () => {
  /** The PV controller's bind of the claim to `pv` (volumeName and its annotations; `phase` once it is done). */
  const controllerBinds = (cluster: TestCluster, pv: string, phase?: string) => {
    const pvc = cluster.store.get('PersistentVolumeClaim', 'default/data')!;
    cluster.add({
      ...pvc,
      spec: { ...pvc.spec, volumeName: pv },
      metadata: {
        ...pvc.metadata,
        annotations: {
          ...pvc.metadata.annotations,
          [ANN_BOUND_BY_CONTROLLER]: 'yes',
          'pv.kubernetes.io/bind-completed': 'yes',
        },
      },
      ...(phase ? { status: { phase } } : {}),
    });
  };

  it('a claim the PV controller bound first keeps the hold until the controller marks it Bound, then loses it', async () => {
    const { cluster } = setup();
    const binder = binderAt(cluster, NOW);
    const writePV = cluster.writer.updatePersistentVolume;
    cluster.writer.updatePersistentVolume = async (pv: PersistentVolume) => {
      const out = await writePV.call(cluster.writer, pv);
      controllerBinds(cluster, 'pv-a');
      return out;
    };
    const written = await binder.bindAPIUpdate(binding(cluster, 'pv-a'));
    assert.equal(written.staticBindings[0].pvc.spec.volumeName, 'pv-a', "the controller's binding is ours");
    const held = () =>
      cluster.store.get('PersistentVolumeClaim', 'default/data')!.metadata.annotations?.[ANN_SELECTED_VOLUME];
    assert.equal(held(), holdValue('pv-a', NOW), 'not dropped while the controller still writes the claim');
    controllerBinds(cluster, 'pv-a', 'Bound');
    await new Promise((r) => setImmediate(r));
    assert.equal(held(), undefined);
  });

  it('a refused drop is tried again on a newer version of the claim only, and given up after three refusals', async () => {
    const bound = (rv: string): PersistentVolumeClaim => ({
      ...claim({ [ANN_SELECTED_VOLUME]: holdValue('pv-a', NOW), 'pv.kubernetes.io/bind-completed': 'yes' }),
      metadata: {
        ...claim().metadata,
        resourceVersion: rv,
        annotations: { [ANN_SELECTED_VOLUME]: holdValue('pv-a', NOW), 'pv.kubernetes.io/bind-completed': 'yes' },
      },
      status: { phase: 'Bound' },
    });
    let latest = bound('1');
    const tried: string[] = [];
    const gaveUp: string[] = [];
    const holds = new ServedHolds({
      latest: () => latest,
      drop: async (pvc) => {
        tried.push(pvc.metadata.resourceVersion!);
        throw new WriteError(409, 'Conflict', 'the object has been modified');
      },
      gaveUp: (_err, key) => gaveUp.push(key),
    });
    const settle = () => new Promise((r) => setImmediate(r));
    holds.add('default/data');
    await settle();
    holds.changed('default/data');
    await settle();
    assert.deepEqual(tried, ['1'], 'the same version is not written again');
    for (const rv of ['2', '3']) {
      latest = bound(rv);
      holds.changed('default/data');
      await settle();
    }
    assert.deepEqual(tried, ['1', '2', '3']);
    assert.deepEqual(gaveUp, ['default/data']);
    assert.equal(holds.size, 0);
  });
});

describe('the read-back before the Binding', () => {
  it("reads no claim or PV whose binding this bind wrote, both halves: the API's answers to those writes stand", async () => {
    const { cluster, pod } = setup();
    await binderAt(cluster, NOW).bindPodVolumes(pod, 'node-a', binding(cluster, 'pv-a'));
    assert.deepEqual(cluster.writer.reads, []);
  });

  it('reads a claim bound before the bind, and its PV', async () => {
    const { cluster, pod } = setup();
    const pvc = cluster.store.get('PersistentVolumeClaim', 'default/data')!;
    cluster.add(bindVolumeToClaim(cluster.store.get('PersistentVolume', 'pv-a')!, pvc).pv);
    cluster.add({ ...pvc, spec: { ...pvc.spec, volumeName: 'pv-a' } });
    assert.equal(await binderAt(cluster, NOW).checkPodVolumesFromAPI(pod, 'node-a'), undefined);
    assert.deepEqual(cluster.writer.reads, ['default/data', 'pv-a']);
  });
});
