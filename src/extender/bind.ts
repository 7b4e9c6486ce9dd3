// bind: kube-scheduler delegates the pod's Binding to us (and, when its profile disables VolumeBinding, the volume
// binding before it). Order, as upstream's binding cycle: assume the pod in the cache, reserve (assume volumes),
// preBind (write volumes, wait until bound), create the Binding. Any failure undoes every assumption.
// Idempotent per pod UID: a retry joins the bind in flight or sees its result; another node is refused.
// Truthful: a Binding refused with 409 or whose outcome is unknown (lost reply, timeout, 5xx) is read back, and so is
// the pod whose preBind failed (another bind of it may have taken its claims and bound it); a pod bound to the
// requested node is success: kube-scheduler must never fail an attempt for a pod that is bound.
import { podBindingNow, podBindingState, writeThenReadBack } from '../cluster/read-back.ts';
import { objectKey, type Pod } from '../cluster/types.ts';
import { CycleState } from '../framework/cycle-state.ts';
import { isSuccess, type Status } from '../framework/interfaces.ts';
import type { Log } from '../log.ts';
import type { ExtenderDeps } from './deps.ts';
import type { ExtenderBindingArgs, ExtenderBindingResult } from './wire.ts';

interface InFlight {
  node: string;
  result: Promise<string>;
}

function describe(s: Status): string {
  return `${s.plugin ? `${s.plugin}: ` : ''}${s.reasons.join(', ') || s.code}`;
}

export class PodBinder {
  readonly #deps: ExtenderDeps;
  readonly #inFlight = new Map<string, InFlight>();
  readonly #shutdown = new AbortController();

  constructor(deps: ExtenderDeps) {
    this.#deps = deps;
  }

  get inFlightCount(): number {
    return this.#inFlight.size;
  }

  /** `log` is the request's logger, so that the bind's lines carry the request id. */
  async bind(args: ExtenderBindingArgs, log: Log = this.#deps.logger): Promise<ExtenderBindingResult> {
    const { PodNamespace: ns, PodName: name, PodUID: uid, Node: node } = args;
    const key = `${ns}/${name}`;
    const running = this.#inFlight.get(uid);
    if (running) {
      if (running.node !== node) {
        return { Error: `pod "${key}" is already being bound to node "${running.node}", not "${node}"` };
      }
      return { Error: await running.result };
    }
    let pod = this.#deps.store.get('Pod', key);
    if (!pod) {
      // kube-scheduler's informer may see a new pod before our watch does (a real API server delivers each watch on
      // its own): a pod the store has not seen yet is read from the API before it is called not found.
      try {
        pod = await this.#deps.writer.getPod(ns, name);
      } catch (err) {
        return { Error: `pod "${key}" is not in the store and reading it failed: ${(err as Error).message}` };
      }
      const joined = this.#inFlight.get(uid);
      if (joined) {
        return {
          Error:
            joined.node === node
              ? await joined.result
              : `pod "${key}" is already being bound to node "${joined.node}", not "${node}"`,
        };
      }
    }
    const settled = this.#settled(pod, key, uid, node);
    if (settled !== undefined) return { Error: settled };

    // #settled returned undefined, so the pod exists with this UID.
    const result = this.#run(pod!, node, log).finally(() => this.#inFlight.delete(uid));
    this.#inFlight.set(uid, { node, result });
    return { Error: await result };
  }

  /** Aborts binds that are waiting for volumes and waits until every bind has undone its assumptions. */
  async close(): Promise<void> {
    this.#shutdown.abort(new Error('extender is shutting down'));
    await Promise.allSettled([...this.#inFlight.values()].map((f) => f.result));
  }

  /** The answer when no bind needs to run: '' (done already), an error, or undefined (go ahead). */
  #settled(pod: Pod | undefined, key: string, uid: string, node: string): string | undefined {
    const { cache } = this.#deps;
    const assumedOn = cache.isAssumed(uid) ? cache.getPod(uid)?.spec.nodeName : undefined;
    return podBindingState(pod, key, uid, node, pod?.spec.nodeName || assumedOn);
  }

  /**
   * After preBind failed: is the pod bound all the same? Another bind of it (kube-scheduler's retry on another replica)
   * that took a claim first may have bound it before our watch shows it; preBind gives up on a lost claim only once the
   * pod is bound or cannot be bound to the node (volume-binder.ts #afterLostClaim). '' when bound to `node`; why not
   * otherwise; undefined when not bound, or the API cannot be read (the failure then stands as it is).
   */
  async #boundByAnother(pod: Pod, node: string): Promise<string | undefined> {
    if (this.#shutdown.signal.aborted) return undefined;
    try {
      return await podBindingNow(this.#deps, pod, node);
    } catch {
      return undefined;
    }
  }

  async #run(pod: Pod, node: string, logger: Log): Promise<string> {
    const { cache, framework, writer } = this.#deps;
    const key = objectKey('Pod', pod);
    const log = logger.child({ pod: key, uid: pod.metadata.uid, node });
    const started = performance.now();
    const assumed: Pod = { ...pod, spec: { ...pod.spec, nodeName: node } };
    try {
      cache.assumePod(assumed);
    } catch (err) {
      log.warn({ err }, 'bind refused: the cache could not assume the pod');
      return `cannot assume pod "${key}" on node "${node}": ${(err as Error).message}`;
    }
    const state = new CycleState();
    let reserved = false;
    /** Every assumption of this bind undone: its volumes unreserved, the pod forgotten. */
    const undo = () => {
      try {
        if (reserved) framework.runUnreserve(state, pod, node);
      } catch (err) {
        log.error({ err }, 'unreserve failed');
      }
      try {
        cache.forgetPod(assumed);
      } catch (err) {
        // The watch confirmed the pod meanwhile (the Binding landed although its reply failed): nothing to forget.
        log.info({ err }, 'assumed pod already confirmed; not forgetting it');
      }
    };
    const fail = (message: string, detail?: unknown): string => {
      undo();
      log.warn({ err: detail, ms: Math.round(performance.now() - started) }, `bind failed: ${message}`);
      return message;
    };

    try {
      // A plugin that throws (rather than answering Error) must not leave the pod assumed: it fails the bind too.
      const pre = framework.runPreFilter(state, pod);
      if (!isSuccess(pre)) return fail(`pod "${key}" cannot run on node "${node}": ${describe(pre)}`);
      const reserve = framework.runReserve(state, pod, node);
      if (!isSuccess(reserve)) return fail(`reserving volumes on node "${node}" failed: ${describe(reserve)}`);
      reserved = true;
      const preBind = await framework.runPreBind(state, pod, node, this.#shutdown.signal);
      if (!isSuccess(preBind)) {
        const why = `binding volumes on node "${node}" failed: ${describe(preBind)}`;
        // Our watch may not show yet that the other bind bound the pod here: an answer of Error would then be false.
        const other = await this.#boundByAnother(pod, node);
        if (other !== '') return fail(other ? `${why}; ${other}` : why, preBind.cause);
        undo();
        log.info({ reason: why }, 'another bind of the pod bound it to the node meanwhile');
        return '';
      }
    } catch (err) {
      return fail(`binding pod "${key}" to node "${node}" failed: ${(err as Error).message}`, err);
    }
    const preBound = performance.now();
    const failedBinding = (err: unknown) =>
      `creating the Binding of pod "${key}" to node "${node}" failed: ${(err as Error).message}`;
    try {
      // A Binding refused with 409 or whose outcome is unknown: is the pod bound to the node all the same?
      const outcome = await writeThenReadBack(
        () =>
          writer.bindPod({ namespace: pod.metadata.namespace!, name: pod.metadata.name, uid: pod.metadata.uid }, node),
        { readBack: () => podBindingNow(this.#deps, pod, node), unknown: true },
      );
      if (outcome.kind === 'unread') {
        const why = `reading pod "${key}" back failed: ${(outcome.readError as Error).message}`;
        return fail(`${failedBinding(outcome.error)}; ${why}`, outcome.error);
      }
      if (outcome.kind !== 'written') {
        const state = outcome.current ?? `pod "${key}" is not bound`;
        if (state !== '') return fail(`${failedBinding(outcome.error)}; ${state}`, outcome.error);
        log.info({ err: outcome.error }, 'the Binding failed, but the pod is bound to the node: it landed');
      }
    } catch (err) {
      return fail(failedBinding(err), err);
    }
    cache.finishBinding(assumed);
    const ms = Math.round(performance.now() - started);
    log.info({ ms, volumesMs: Math.round(preBound - started) }, 'pod bound');
    return '';
  }
}
