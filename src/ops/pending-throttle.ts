// When the pending report's work runs, and for how long: the CPU it takes is throttled so that kube-scheduler's verbs
// go first. The work runs in slices of a few milliseconds; between slices the event loop serves the verbs, and the
// worker rests in proportion to the time it worked, so a cluster that changes all the time costs at most a share of a
// core: dutyCycle while no verb came for a second, a fifth of it in shorter slices while verbs come (the report is
// worth less than the verbs' latency); it starts no slice while verbs are queued, and rests longer while its slices
// start late (the process short of CPU). While verbs come, a verb that arrives during a slice would wait for its end
// (about one in ten behind a 1 ms slice): so a slice then runs in pieces of a quarter of a millisecond with a turn of
// the event loop between two, in which a request that arrived is read and queued, which ends the slice; and no slice
// starts or goes on within quietMsAfterVerb of a verb's answer, as kube-scheduler calls the next verb of its cycle
// right then (prioritize after filter, bind after that): the slices go between its scheduling cycles. What the work
// is, the throttle does not know (ThrottledWork). Caught up with work held back for later, it sleeps until that is
// due, and a wake() before then comes first.

/** A slice due this much later than planned means the process was short of CPU (verbs, GC, other processes). */
const LATE_MS = 5;
/** The longest the worker's rests grow to while the process stays short of CPU (times the duty-cycle rest). */
const MAX_BACKOFF = 64;
/** How long the worker waits before looking again while verbs are queued. */
const BUSY_PAUSE_MS = 2;
/** Verbs came within this long: the worker takes dutyCycleWithVerbs, in slices of at most sliceMsWithVerbs. */
const VERBS_RECENT_MS = 1000;

/** The work the throttle runs (the pending report's explanations). */
export interface ThrottledWork {
  /** Works until `deadline` (clock ms), more sparingly while `verbs` come; false when nothing is left to do now. */
  work(deadline: number, verbs: boolean): boolean;
  /** Nothing is left to do until the state changes again. */
  done(): boolean;
  /** When work held back for later is due (clock ms; 0 when none): the worker looks again by then, caught up or not. */
  dueAt(): number;
  /** A slice ended with nothing left to do: the worker stops until woken (or until work held back is due). */
  caughtUp(): void;
}

export interface CpuThrottleOptions {
  /** Longest run of work before yielding to the event loop. */
  sliceMs?: number;
  /** The same while verbs come (see VERBS_RECENT_MS). */
  sliceMsWithVerbs?: number;
  /**
   * While verbs come, a slice runs in pieces of at most this long, with a turn of the event loop between two (a verb
   * read meanwhile ends the slice): a verb that arrives during a slice waits for the end of a piece, not of the slice.
   */
  pieceMsWithVerbs?: number;
  /**
   * While verbs come, no slice starts (or goes on) within this long after a verb answered: kube-scheduler calls the
   * next verb of its cycle (prioritize after filter, bind after prioritize) right then; the slices go between cycles.
   */
  quietMsAfterVerb?: number;
  /** Largest share of one core the worker takes while the cluster keeps changing (0 < dutyCycle <= 1). */
  dutyCycle?: number;
  /** The same while verbs come. */
  dutyCycleWithVerbs?: number;
  /** The clock slices are timed by (performance.now() ms): a test steps it to end a slice after every step. */
  clock?: () => number;
}

export class CpuThrottle {
  readonly #target: ThrottledWork;
  readonly #sliceMs: number;
  readonly #sliceMsWithVerbs: number;
  readonly #pieceMsWithVerbs: number;
  readonly #quietMsAfterVerb: number;
  readonly #dutyCycle: number;
  readonly #dutyCycleWithVerbs: number;
  readonly #clock: () => number;
  #timer?: NodeJS.Timeout | NodeJS.Immediate;
  /** The planned turn is the one for work due later, after catching up: a wake() replaces it. */
  #sleeping = false;
  /** Multiplies the worker's rest: doubled each time a slice starts late, halved when on time. */
  #backoff = 1;
  #busy: () => boolean = () => false;
  #lastVerbAt: () => number = () => Number.NEGATIVE_INFINITY;
  #lastAnswerAt: () => number = () => Number.NEGATIVE_INFINITY;
  /** A slice under way while verbs come, run a piece at a time: when it must end, and the work done so far (ms). */
  #slice?: { deadline: number; worked: number };
  #stopped = false;
  #workMs = 0;

  constructor(target: ThrottledWork, options: CpuThrottleOptions = {}) {
    this.#target = target;
    this.#sliceMs = options.sliceMs ?? 2;
    this.#sliceMsWithVerbs = options.sliceMsWithVerbs ?? 1;
    this.#pieceMsWithVerbs = options.pieceMsWithVerbs ?? 0.25;
    this.#quietMsAfterVerb = options.quietMsAfterVerb ?? 2;
    this.#dutyCycle = options.dutyCycle ?? 0.5;
    this.#dutyCycleWithVerbs = options.dutyCycleWithVerbs ?? 0.1;
    this.#clock = options.clock ?? (() => performance.now());
  }

  /** Milliseconds (by the clock) spent in the work's slices, in total. */
  get workMs(): number {
    return this.#workMs;
  }

  /**
   * While `busy` says so (verbs are queued), the worker starts no slice: the verbs go first. `lastVerbAt`: when the
   * last verb arrived (clock ms), so that the worker works less while verbs come; `lastAnswerAt`: when the last verb
   * answered, so that no slice starts within quietMsAfterVerb of it.
   */
  yieldTo(busy: () => boolean, lastVerbAt?: () => number, lastAnswerAt?: () => number): void {
    this.#busy = busy;
    if (lastVerbAt) this.#lastVerbAt = lastVerbAt;
    if (lastAnswerAt) this.#lastAnswerAt = lastAnswerAt;
  }

  /** There may be work: the worker takes a turn on the next turn of the event loop, unless one is planned already. */
  wake(): void {
    if (this.#sleeping) this.#cancel();
    this.#schedule();
  }

  /** Drops the turn planned and the slice under way (the work is being run otherwise); wake() starts again. */
  interrupt(): void {
    this.#cancel();
    this.#slice = undefined;
  }

  /** No more turns, whatever wakes it. */
  stop(): void {
    this.#stopped = true;
    this.#cancel();
  }

  /** The next turn of the worker in `pauseMs` (a timer; from 1 ms, or when `timer` says so), else on the next turn. */
  #schedule(pauseMs = 0, timer = pauseMs >= 1): void {
    if (this.#timer || this.#stopped) return;
    const due = this.#clock() + pauseMs;
    const run = () => {
      this.#timer = undefined;
      this.#sleeping = false;
      this.#turn(due);
    };
    this.#timer = timer ? setTimeout(run, Math.max(1, pauseMs)) : setImmediate(run);
  }

  /** A turn of the worker, due at `due`: a slice, or a piece of one while verbs come, unless the verbs go first. */
  #turn(due: number): void {
    const started = this.#clock();
    const slice = this.#slice;
    this.#slice = undefined;
    // Late: something else had the CPU (verbs, a GC, other processes on the node). The report is worth less than the
    // verbs' latency: it rests longer until its slices start on time again. (A piece follows the one before at once.)
    if (!slice)
      this.#backoff =
        started - due > LATE_MS ? Math.min(this.#backoff * 2, MAX_BACKOFF) : Math.max(1, this.#backoff / 2);
    const answered = this.#lastAnswerAt();
    const verbs = started - Math.max(this.#lastVerbAt(), answered) < VERBS_RECENT_MS;
    // A verb is queued, or answered just now (the next verb of its cycle is on its way): a slice under way ends here.
    const quietUntil = verbs ? answered + this.#quietMsAfterVerb : started;
    if (this.#busy() || started < quietUntil) {
      const pause = this.#busy() ? BUSY_PAUSE_MS : quietUntil - started;
      if (slice) this.#rest(slice.worked, verbs, pause);
      else this.#schedule(pause, true);
      return;
    }
    const deadline =
      slice?.deadline ?? started + (verbs ? Math.min(this.#sliceMs, this.#sliceMsWithVerbs) : this.#sliceMs);
    const more = this.#target.work(verbs ? Math.min(deadline, started + this.#pieceMsWithVerbs) : deadline, verbs);
    const now = this.#clock();
    this.#workMs += now - started;
    const worked = (slice?.worked ?? 0) + now - started;
    // The slice goes on after a turn of the event loop, in which a verb that arrived is read (and then goes first).
    if (more && verbs && now < deadline) {
      this.#slice = { deadline, worked };
      this.#schedule(0, false);
    } else this.#rest(worked, verbs);
  }

  /** After a slice that worked `worked` ms: done, or the next slice once the duty cycle allows (and `atLeast`). */
  #rest(worked: number, verbs: boolean, atLeast = 0): void {
    if (this.#target.done()) {
      this.#target.caughtUp();
      const due = this.#target.dueAt();
      if (due > 0 && !this.#timer) {
        this.#schedule(Math.max(1, due - this.#clock()), true);
        this.#sleeping = true;
      }
      return;
    }
    const duty = verbs ? Math.min(this.#dutyCycle, this.#dutyCycleWithVerbs) : this.#dutyCycle;
    const rest = ((worked * (1 - duty)) / duty) * this.#backoff;
    // Work held back (a sweep not due yet): looked at again within a second, as verbs may stop coming meanwhile.
    const wait = Math.min(this.#target.dueAt() - this.#clock(), VERBS_RECENT_MS);
    const pause = Math.max(rest, wait, atLeast);
    this.#schedule(pause, pause >= 1 || atLeast > 0);
  }

  #cancel(): void {
    this.#sleeping = false;
    if (!this.#timer) return;
    clearTimeout(this.#timer as NodeJS.Timeout);
    clearImmediate(this.#timer as NodeJS.Immediate);
    this.#timer = undefined;
  }
}
