// The pending report's CPU throttle (src/ops/pending-throttle.ts) yields to kube-scheduler's verbs: no slice while a
// verb is queued or right after one answered, slices cut into pieces while verbs come, and rests in proportion to the
// work done (its duty cycle), longer while slices start late. The work here is a stand-in that takes whole slices, on
// a clock the test moves with the mocked timers: the throttle's decisions alone are checked.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { CpuThrottle, type CpuThrottleOptions } from '../../src/ops/pending-throttle.ts';

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A throttle over work of `slices` slices, each taking its whole deadline; `clock.now` is the throttle's clock. */
function harness(t: TestContext, options: CpuThrottleOptions = {}, slices = Number.POSITIVE_INFINITY) {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const clock = { now: 0 };
  const verbs = { busy: false, arrivedAt: Number.NEGATIVE_INFINITY, answeredAt: Number.NEGATIVE_INFINITY };
  const state = {
    left: slices,
    /** Work is left, but none of it can be done now (the cache waits for a sweep). */
    held: false,
    dueAt: 0,
    caughtUp: 0,
    calls: [] as { at: number; deadline: number; verbs: boolean }[],
  };
  const throttle = new CpuThrottle(
    {
      work: (deadline, withVerbs) => {
        state.calls.push({ at: clock.now, deadline, verbs: withVerbs });
        if (state.left === 0 || (state.held && clock.now < state.dueAt)) return false;
        state.left--;
        clock.now = deadline;
        return state.left > 0;
      },
      done: () => state.left === 0 && !state.held,
      dueAt: () => state.dueAt,
      caughtUp: () => state.caughtUp++,
    },
    { clock: () => clock.now, ...options },
  );
  t.after(() => throttle.stop());
  throttle.yieldTo(
    () => verbs.busy,
    () => verbs.arrivedAt,
    () => verbs.answeredAt,
  );
  /** `ms` pass: the clock moves, the timers due fire, and the event loop turns. */
  const elapse = async (ms: number) => {
    clock.now += ms;
    t.mock.timers.tick(ms);
    await turn();
  };
  return { throttle, clock, verbs, state, elapse };
}

describe('the throttle without verbs', () => {
  it('works a slice, then rests as long as its duty cycle says, on a timer', async (t) => {
    const { throttle, state, elapse } = harness(t, { sliceMs: 2, dutyCycle: 0.25 });
    throttle.wake();
    await turn();
    assert.deepEqual(state.calls, [{ at: 0, deadline: 2, verbs: false }]);
    // 2 ms of work at a quarter of a core: 6 ms of rest.
    await elapse(5);
    assert.equal(state.calls.length, 1, 'resting');
    await elapse(1);
    assert.equal(state.calls.length, 2, 'the next slice after the rest');
    assert.deepEqual(state.calls[1], { at: 8, deadline: 10, verbs: false });
    throttle.stop();
  });

  it('doubles its rests while its slices start late (the process short of CPU), and halves them again on time', async (t) => {
    const { throttle, clock, state, elapse } = harness(t, { sliceMs: 2, dutyCycle: 0.5 });
    throttle.wake();
    await turn();
    // Rest of 2 ms planned, but the turn comes 10 ms late: the next rest is twice as long.
    clock.now += 10;
    await elapse(2);
    assert.equal(state.calls.length, 2);
    await elapse(3);
    assert.equal(state.calls.length, 2, 'a rest of 4 ms, not 2');
    await elapse(1);
    assert.equal(state.calls.length, 3, 'on time again');
    await elapse(2);
    assert.equal(state.calls.length, 4, 'back to a rest of 2 ms');
    throttle.stop();
  });

  it('stops once the work is done, says so, and starts again when woken', async (t) => {
    const { throttle, state, elapse } = harness(t, { sliceMs: 2, dutyCycle: 1 }, 2);
    throttle.wake();
    for (let i = 0; i < 5; i++) await turn();
    assert.equal(state.calls.length, 2);
    assert.equal(state.caughtUp, 1);
    await elapse(100);
    assert.equal(state.calls.length, 2, 'no turn while there is nothing to do');
    state.left = 1;
    throttle.wake();
    await turn();
    assert.equal(state.calls.length, 3);
    assert.equal(state.caughtUp, 2);
    throttle.stop();
  });

  it('looks again when held-back work is due, within a second', async (t) => {
    const { throttle, clock, state, elapse } = harness(t, { sliceMs: 2, dutyCycle: 0.5 });
    // Work left, none of it to do before 300 ms from now (a sweep not due yet).
    state.held = true;
    state.dueAt = 300;
    throttle.wake();
    await turn();
    assert.equal(state.calls.length, 1);
    await elapse(299);
    assert.equal(state.calls.length, 1);
    await elapse(1);
    assert.equal(state.calls.length, 2, 'back when it is due');
    assert.equal(clock.now, 302, 'and it worked a slice');
    // Due in 5 s: back within a second all the same (verbs may stop coming meanwhile, and the sweep be due at once).
    state.dueAt = clock.now + 5000;
    await elapse(2);
    assert.equal(state.calls.length, 3, 'after the slice’s rest, held back again');
    await elapse(999);
    assert.equal(state.calls.length, 3);
    await elapse(1);
    assert.equal(state.calls.length, 4);
    assert.equal(state.caughtUp, 0, 'never caught up while work is held back');
  });

  it('caught up with work due later, sleeps until it is due, and a wake before then comes first', async (t) => {
    const { throttle, state, elapse } = harness(t, { sliceMs: 2, dutyCycle: 1 }, 1);
    // Nothing to do now, something at 500 ms (a pod not tried yet): not work, but a turn is owed then.
    state.dueAt = 500;
    throttle.wake();
    await turn();
    assert.deepEqual([state.calls.length, state.caughtUp], [1, 1]);
    await elapse(100);
    assert.equal(state.calls.length, 1, 'sleeping');
    throttle.wake();
    await turn();
    assert.deepEqual([state.calls.length, state.caughtUp], [2, 2], 'woken at once, not at 500 ms');
    await elapse(397);
    assert.equal(state.calls.length, 2, 'sleeping again until it is due');
    await elapse(1);
    assert.equal(state.calls.length, 3, 'a turn when it is due');
    throttle.stop();
  });

  it('takes no more turns once stopped, however woken', async (t) => {
    const { throttle, state, elapse } = harness(t, { sliceMs: 2, dutyCycle: 0.5 });
    throttle.wake();
    await turn();
    throttle.stop();
    throttle.wake();
    await elapse(100);
    assert.equal(state.calls.length, 1);
  });
});

describe('the throttle while verbs come', () => {
  /** Slices of 1 ms in pieces of a quarter, a tenth of a core, no quiet window. */
  const PIECES: CpuThrottleOptions = {
    sliceMs: 2,
    sliceMsWithVerbs: 1,
    pieceMsWithVerbs: 0.25,
    quietMsAfterVerb: 0,
    dutyCycleWithVerbs: 0.1,
  };

  it('starts no slice while a verb is queued, and looks again every 2 ms', async (t) => {
    const { throttle, verbs, state, elapse } = harness(t);
    verbs.busy = true;
    throttle.wake();
    await turn();
    await elapse(2);
    await elapse(2);
    assert.equal(state.calls.length, 0);
    verbs.busy = false;
    await elapse(2);
    assert.equal(state.calls.length, 1);
    throttle.stop();
  });

  it('starts no slice within quietMsAfterVerb of an answer (the next verb of the cycle comes then)', async (t) => {
    const { throttle, clock, verbs, state, elapse } = harness(t, { quietMsAfterVerb: 2 });
    clock.now = 100;
    verbs.arrivedAt = 99;
    verbs.answeredAt = 99.5;
    throttle.wake();
    await turn();
    assert.equal(state.calls.length, 0, '0.5 ms after the answer');
    await elapse(1.5);
    assert.ok(state.calls.length > 0, 'the window over');
    assert.deepEqual(state.calls[0], { at: 101.5, deadline: 101.75, verbs: true }, 'a piece of a slice');
    throttle.stop();
  });

  it('cuts a slice into pieces with a turn of the event loop between two, then rests at dutyCycleWithVerbs', async (t) => {
    const { throttle, clock, verbs, state, elapse } = harness(t, PIECES);
    verbs.arrivedAt = -1;
    throttle.wake();
    for (let i = 0; i < 6; i++) await turn();
    assert.deepEqual(
      state.calls.map((c) => [c.at, c.deadline, c.verbs]),
      [
        [0, 0.25, true],
        [0.25, 0.5, true],
        [0.5, 0.75, true],
        [0.75, 1, true],
      ],
    );
    // 1 ms of work at a tenth of a core: 9 ms of rest.
    assert.equal(clock.now, 1);
    await elapse(8.5);
    assert.equal(state.calls.length, 4);
    await elapse(1);
    assert.ok(state.calls.length > 4, 'the next slice');
    throttle.stop();
  });

  it('ends a slice at the piece during which a verb arrived, and rests for the work done so far', async (t) => {
    const { throttle, verbs, state, elapse } = harness(t, PIECES);
    verbs.arrivedAt = -1;
    throttle.wake();
    await turn();
    assert.equal(state.calls.length, 1);
    verbs.busy = true;
    await turn();
    assert.equal(state.calls.length, 1, 'the verb goes first');
    // 0.25 ms of work at a tenth of a core: a rest of 2.25 ms, longer than the 2 ms pause for a queued verb.
    verbs.busy = false;
    await elapse(2);
    assert.equal(state.calls.length, 1);
    await elapse(0.5);
    assert.ok(state.calls.length > 1, 'a new slice');
    assert.equal(state.calls[1].deadline - state.calls[1].at, 0.25);
    throttle.stop();
  });
});
