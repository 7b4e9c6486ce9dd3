// When a claim half may carry bind-completed: only where the PV controller surely sees the PV's claimRef as we do.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StoreEvent } from '../../src/cluster/store.ts';
import type { PersistentVolume } from '../../src/cluster/types.ts';
import { PVControllerView, SETTLED_SECONDS } from '../../src/volumes/pv-controller-view.ts';
import { makePV } from '../helpers/objects.ts';

const T0 = Date.parse('2025-06-01T12:00:00Z');
const SETTLED = SETTLED_SECONDS * 1000;

function pv(phase: string, claimRef?: { name: string; uid: string }, uid = 'uid-1'): PersistentVolume {
  const base = makePV('pv-a', { className: 'local', size: '10Gi' });
  return {
    ...base,
    metadata: { ...base.metadata, uid },
    spec: { ...base.spec, ...(claimRef ? { claimRef: { namespace: 'default', ...claimRef } } : {}) },
    status: { phase },
  };
}
const add = (obj: PersistentVolume): StoreEvent<'PersistentVolume'> => ({ type: 'add', kind: 'PersistentVolume', obj });
const update = (old: PersistentVolume, obj: PersistentVolume): StoreEvent<'PersistentVolume'> => ({
  type: 'update',
  kind: 'PersistentVolume',
  old,
  obj,
});

/** A view started at T0; with `later`, its clock past the first list's SETTLED_SECONDS. */
function view(later = false) {
  const clock = { now: T0 };
  const v = new PVControllerView(() => clock.now);
  if (later) clock.now = T0 + 2 * SETTLED;
  return { clock, view: v };
}

/** A PV created while we watch and made Available by the controller (a status write): the Available version. */
function createdAndAvailable(v: PVControllerView): PersistentVolume {
  const created = pv('Pending');
  v.observe(add(created));
  assert.equal(v.seesClaimRef(created), false, 'only created: the controller may not have it');
  const available = pv('Available');
  v.observe(update(created, available));
  return available;
}

describe('what the PV controller surely sees of a PV', () => {
  it('a PV of the first list: once our watch has shown it unchanged for SETTLED_SECONDS', () => {
    const { clock, view: v } = view();
    const free = pv('Available');
    v.observe(add(free));
    assert.equal(v.seesClaimRef(free), false);
    clock.now = T0 + SETTLED - 1;
    assert.equal(v.seesClaimRef(free), false);
    clock.now = T0 + SETTLED;
    assert.equal(v.seesClaimRef(free), true);
  });

  it('a PV the store held before the view started: from the start, or at once after a status write', () => {
    const { clock, view: v } = view();
    const held = pv('Available');
    assert.equal(v.seesClaimRef(held), false);
    clock.now = T0 + SETTLED;
    assert.equal(v.seesClaimRef(held), true);

    const early = view();
    const bound = pv('Bound', { name: 'data', uid: 'c-1' });
    early.view.observe(update(pv('Available', { name: 'data', uid: 'c-1' }), bound));
    assert.equal(early.view.seesClaimRef(bound), true, 'the phase written over the same claimRef');
  });

  it("a PV created while we watch: at once after the controller's status write (its Available)", () => {
    const { view: v } = view(true);
    assert.equal(v.seesClaimRef(createdAndAvailable(v)), true);
  });

  it('a claimRef changed by someone else after the last status write: not until settled', () => {
    const { clock, view: v } = view(true);
    const available = createdAndAvailable(v);
    // Prebound to another claim, then freed again (our unbindLost), the phase Available throughout.
    const prebound = pv('Available', { name: 'other', uid: 'o-1' });
    v.observe(update(available, prebound));
    assert.equal(v.seesClaimRef(prebound), false);
    const freed = pv('Available');
    v.observe(update(prebound, freed));
    assert.equal(v.seesClaimRef(freed), false, 'the controller may still see the other claim');
    clock.now += SETTLED;
    assert.equal(v.seesClaimRef(freed), true);
  });

  it('a status write in the same event as a claimRef change proves nothing (versions between were skipped)', () => {
    const { view: v } = view(true);
    const prebound = pv('Pending', { name: 'other', uid: 'o-1' });
    v.observe(add(prebound));
    const freed = pv('Available');
    v.observe(update(prebound, freed));
    assert.equal(v.seesClaimRef(freed), false);
  });

  it('a PV recreated under the same name starts again', () => {
    const { clock, view: v } = view(true);
    const old = pv('Bound', { name: 'old', uid: 'o-1' });
    v.observe(add(old));
    clock.now += SETTLED;
    assert.equal(v.seesClaimRef(old), true);
    v.observe({ type: 'delete', kind: 'PersistentVolume', obj: old });
    const recreated = pv('Pending', undefined, 'uid-2');
    v.observe(add(recreated));
    assert.equal(v.seesClaimRef(recreated), false);
    assert.equal(v.seesClaimRef(pv('Pending', undefined, 'uid-1')), false, 'an incarnation our watch no longer shows');
  });

  it('settled PVs are forgotten, and still count as seen', () => {
    const { clock, view: v } = view();
    const named = (name: string, phase: string) => {
      const p = pv(phase, undefined, name);
      return { ...p, metadata: { ...p.metadata, name } };
    };
    const pvs = ['pv-a', 'pv-b', 'pv-c'].map((n) => named(n, 'Available'));
    for (const p of pvs) v.observe(add(p));
    assert.equal(v.tracked, 3);
    clock.now = T0 + SETTLED;
    const later = named('pv-d', 'Pending');
    v.observe(add(later));
    assert.equal(v.tracked, 1, 'only the PV changed within SETTLED_SECONDS');
    for (const p of pvs) assert.equal(v.seesClaimRef(p), true);
    assert.equal(v.seesClaimRef(later), false);
  });
});

describe("the store's first list", () => {
  it('counts from the start without an entry per PV, as the PVs held at the start do', () => {
    const { clock, view: v } = view();
    const listed = pv('Available');
    v.observe(add(listed), true);
    assert.equal(v.tracked, 0);
    assert.equal(v.seesClaimRef(listed), false);
    clock.now = T0 + SETTLED;
    assert.equal(v.seesClaimRef(listed), true);
  });

  it('tracks a PV added after it, from when the watch showed it', () => {
    const { clock, view: v } = view();
    clock.now = T0 + SETTLED / 2;
    const added = pv('Pending');
    v.observe(add(added));
    assert.equal(v.tracked, 1);
    clock.now = T0 + SETTLED;
    assert.equal(v.seesClaimRef(added), false);
  });
});
