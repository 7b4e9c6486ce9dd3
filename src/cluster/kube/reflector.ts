// One reflector per kind, after client-go's Reflector: list (paginated) → replace the store's content → watch from the
// list's resourceVersion with bookmarks → apply events → on a closed watch, watch again from the last seen
// resourceVersion; on 410 Gone, list again. Errors back off exponentially with jitter; a watchdog restarts a watch that
// has been silent (no event, no bookmark) for longer than the staleness threshold. Silence alone never makes a kind
// stale: a real kube-apiserver sends the first bookmark on a quiet watch only ~2 minutes after it opened (measured on
// v1.37), so quiet kinds are silent by nature; a restart that fails, or a watch request left unanswered, is what counts.
import type { Log } from '../../log.ts';
import type { KindStatus } from '../source.ts';
import type { ClusterStore } from '../store.ts';
import type { KindMap } from '../types.ts';
import { Backoff, type BackoffOptions, wait } from './backoff.ts';
import { KubeApiError, type KubeClient } from './client.ts';
import { listAll } from './list.ts';
import { collectionPath, type ResourceInfo } from './resources.ts';
import { watch } from './watch.ts';

export interface ReflectorOptions {
  client: KubeClient;
  resource: ResourceInfo;
  store: ClusterStore;
  logger: Log;
  pageSize: number;
  staleAfterMs: number;
  backoff: BackoffOptions;
  /** Server-side watch timeout in seconds; default random in [300, 600) like client-go, so watches end gradually. */
  watchTimeoutSeconds?: () => number;
  /**
   * For a kind only explain and simulate read: what they lose without it. start() then resolves at the first list
   * that fails too, and the failure is logged once as a warning saying so.
   */
  analysisOnly?: string;
}

/** A list failure in a few words: `403 Forbidden`, or the network error. */
function shortError(err: unknown): string {
  if (err instanceof KubeApiError && err.code > 0) return `${err.code} ${err.reason}`;
  return (err as Error).message;
}

interface WatchObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  code?: number;
  reason?: string;
  message?: string;
}

/** Why one watch ended. */
type WatchEnd =
  | { type: 'closed'; delivered: number } // the server ended the stream (timeoutSeconds, restart)
  | { type: 'gone'; message: string } // 410: our resourceVersion is too old, list again
  | { type: 'silent' } // the watchdog gave up on it
  | { type: 'error'; err: Error; delivered: number }
  | { type: 'stopped' };

interface WatchHandle {
  /** The watch's controller, once the watch request has been answered. */
  abort: AbortController | undefined;
  reason: 'stop' | 'silent' | undefined;
  /** Ends this watch now: the loop goes on even while a connect hangs (it is aborted when it returns). */
  settle: (end: WatchEnd) => void;
}

/** Consecutive list or watch failures (an unanswered watch request among them) after which the kind counts as stale. */
export const STALE_AFTER_FAILURES = 3;

const isGone = (code: number | undefined) => code === 410;

export class Reflector {
  readonly #o: ReflectorOptions;
  readonly #backoff: Backoff;
  readonly #stop = new AbortController();
  #rv = '';
  #synced = false;
  #lastHeard: number | undefined;
  #relists = 0;
  /** Consecutive failed lists or watches; reset by a good list or any delivered event. */
  #failures = 0;
  /** Why the last list failed, until one succeeds. */
  #listError: string | undefined;
  /** An analysis-only kind whose unavailability was logged: said once per outage, and its end too. */
  #unavailableLogged = false;
  #watchRestarts = 0;
  #watchEvents = 0;
  #watchEventChars = 0;
  #lists = 0;
  #loop: Promise<void> | undefined;
  #firstList: { promise: Promise<void>; resolve: () => void };
  /** Set while a watch stream is open: lets stop() and the watchdog end it. */
  #current: WatchHandle | undefined;

  constructor(options: ReflectorOptions) {
    this.#o = options;
    this.#backoff = new Backoff(options.backoff);
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#firstList = { promise, resolve };
  }

  get kind(): ResourceInfo['kind'] {
    return this.#o.resource.kind;
  }

  /** Starts the loop; resolves after the first successful list (retrying transient errors forever until stop). */
  start(): Promise<void> {
    this.#loop ??= this.#run().catch((err: unknown) => {
      // The loop catches everything it expects; this is a bug guard so the process does not die silently.
      this.#o.logger.error({ err, kind: this.kind }, `reflector for ${this.kind} crashed`);
    });
    return this.#firstList.promise;
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    const current = this.#current;
    if (current) {
      current.reason = 'stop';
      current.abort?.abort();
      current.settle({ type: 'stopped' });
    }
    this.#firstList.resolve(); // start() callers must not hang on a stopped source
    await this.#loop;
  }

  status(now = Date.now()): KindStatus {
    const silentForMs = this.#lastHeard === undefined ? undefined : Math.max(0, now - this.#lastHeard);
    return {
      kind: this.kind,
      synced: this.#synced,
      silentForMs,
      // Failing again and again (one blip does not flap readiness); a quiet kind is not stale.
      stale: this.#failures >= STALE_AFTER_FAILURES,
      relists: this.#relists,
      watchRestarts: this.#watchRestarts,
      watchEvents: this.#watchEvents,
      watchEventChars: this.#watchEventChars,
      ...(this.#listError === undefined ? {} : { error: this.#listError }),
    };
  }

  /** The resourceVersion the next watch starts from ('' = list first). */
  get resourceVersion(): string {
    return this.#rv;
  }

  get #stopped(): boolean {
    return this.#stop.signal.aborted;
  }

  async #run(): Promise<void> {
    const log = this.#o.logger;
    const kind = this.kind;
    while (!this.#stopped) {
      if (!this.#rv) {
        try {
          await this.#list();
        } catch (err) {
          if (this.#stopped) break;
          this.#failures++;
          this.#listError = shortError(err);
          const delay = this.#backoff.next();
          const lost = this.#o.analysisOnly;
          if (lost !== undefined) {
            // The verbs never read this kind, so their readiness does not wait for it, whatever the error: a 403 from
            // a role without it, a 404, or a 5xx and a network error that may last (telling them apart would only
            // decide how long scheduling stops). It is retried like any kind, and used once it lists.
            this.#firstList.resolve();
            const { plural } = this.#o.resource;
            const hint = err instanceof KubeApiError && err.code === 403 ? `grant list and watch on ${plural}; ` : '';
            const message = `cannot list ${plural} (${this.#listError}): ${lost} in explain and simulate; ${hint}retrying in the background`;
            if (this.#unavailableLogged) log.debug({ err, kind, retryInMs: delay }, message);
            else log.warn({ err, kind, retryInMs: delay }, message);
            this.#unavailableLogged = true;
          } else {
            // 401/403/404 will not heal by themselves (credentials, RBAC, a missing API): still retried, but loud.
            const level = err instanceof KubeApiError && !err.retriable ? 'error' : 'warn';
            log[level]({ err, kind, retryInMs: delay }, `listing ${kind} failed, retrying: ${(err as Error).message}`);
          }
          await wait(delay, this.#stop.signal);
          continue;
        }
      }
      const end = await this.#watchOnce();
      if (end.type === 'stopped' || this.#stopped) break;
      this.#watchRestarts++;
      switch (end.type) {
        case 'gone':
          log.info(
            { kind, resourceVersion: this.#rv },
            `${kind} watch expired (410 Gone), listing again: ${end.message}`,
          );
          this.#rv = '';
          break;
        case 'silent':
          log.info(
            { kind, silentForMs: this.status().silentForMs, resourceVersion: this.#rv },
            `${kind} watch silent for more than ${this.#o.staleAfterMs} ms (a quiet kind, or a stalled stream), watching again from where it was`,
          );
          break;
        case 'closed':
          if (end.delivered > 0) {
            this.#backoff.reset();
            log.debug({ kind, resourceVersion: this.#rv }, `${kind} watch closed by the server, watching again`);
          } else {
            // A stream that closes at once, again and again, must not turn into a busy loop.
            const delay = this.#backoff.next();
            log.debug({ kind, retryInMs: delay }, `${kind} watch closed without events, watching again`);
            await wait(delay, this.#stop.signal);
          }
          break;
        case 'error': {
          if (end.delivered > 0) this.#backoff.reset();
          this.#failures++;
          const delay = this.#backoff.next();
          log.warn(
            { err: end.err, kind, resourceVersion: this.#rv, retryInMs: delay },
            `${kind} watch failed, retrying: ${end.err.message}`,
          );
          await wait(delay, this.#stop.signal);
          break;
        }
      }
    }
  }

  /** Lists every page, then replaces the kind's content in one step (vanished objects become delete events). */
  async #list(): Promise<void> {
    const { client, resource, store, pageSize } = this.#o;
    const kind = resource.kind;
    const { items, resourceVersion } = await listAll(client, kind, {
      pageSize,
      signal: this.#stop.signal,
      onRestart: () => this.#o.logger.info({ kind }, `${kind} list continue token expired, listing from the start`),
    });
    if (this.#stopped) return;
    store.replace(kind, items);
    this.#backoff.reset();
    this.#failures = 0;
    this.#listError = undefined;
    this.#rv = resourceVersion;
    this.#lastHeard = Date.now();
    if (this.#lists++ > 0) this.#relists++;
    this.#synced = true;
    this.#o.logger.info({ kind, count: items.length, resourceVersion }, `${kind} listed`);
    if (this.#unavailableLogged) {
      this.#unavailableLogged = false;
      this.#o.logger.info({ kind }, `${resource.plural} listed after failing: explain and simulate use them again`);
    }
    this.#firstList.resolve();
  }

  #watchOnce(): Promise<WatchEnd> {
    const { resource, store, staleAfterMs } = this.#o;
    const kind = resource.kind;
    const { promise, resolve } = Promise.withResolvers<WatchEnd>();
    const settle = (end: WatchEnd) => {
      clearInterval(watchdog);
      if (this.#current === current) this.#current = undefined;
      resolve(end);
    };
    const current: WatchHandle = { abort: undefined, reason: undefined, settle };
    this.#current = current;
    let delivered = 0;
    let gone: string | undefined;
    let failure: Error | undefined;
    const startedAt = Date.now();

    // Watchdog: a stream that delivers nothing (not even bookmarks) for staleAfterMs is presumed stuck.
    const period = Math.max(10, Math.min(1_000, Math.floor(staleAfterMs / 4)));
    const watchdog = setInterval(() => {
      const now = Date.now();
      const heard = Math.max(this.#lastHeard ?? startedAt, startedAt);
      if (now - heard > staleAfterMs && !current.reason) {
        current.reason = 'silent';
        const answered = current.abort !== undefined;
        current.abort?.abort();
        // An open watch that is quiet is no failure; a watch request the API server never answered is.
        if (answered) settle({ type: 'silent' });
        else {
          const err = new Error(`watch request not answered within ${staleAfterMs} ms`);
          settle({ type: 'error', err, delivered });
        }
      }
    }, period);
    watchdog.unref();

    const onEvent = (type: string, obj: WatchObject, chars: number) => {
      if (current.reason) return; // events racing our own abort are dropped; the next watch replays them
      this.#lastHeard = Date.now();
      this.#failures = 0;
      delivered++;
      switch (type) {
        case 'ADDED':
        case 'MODIFIED':
        case 'DELETED':
          this.#watchEvents++;
          this.#watchEventChars += chars;
          try {
            if (type === 'DELETED') store.delete(kind, obj as unknown as KindMap[typeof kind]);
            else store.upsert(kind, obj as unknown as KindMap[typeof kind]);
          } catch (err) {
            // A subscriber bug must be visible, and must not end the watch of every other object.
            this.#o.logger.error({ err, kind, type }, `applying a ${kind} ${type} event failed`);
          }
          break;
        case 'BOOKMARK':
          break;
        case 'ERROR':
          if (isGone(obj.code)) gone = obj.message ?? 'too old resource version';
          else failure = new Error(`watch error event: ${obj.code ?? ''} ${obj.reason ?? ''} ${obj.message ?? ''}`);
          current.abort?.abort();
          return;
        default:
          return;
      }
      const rv = obj.metadata?.resourceVersion;
      if (rv) this.#rv = rv;
    };

    const onDone = (err: unknown) => {
      if (current.reason === 'stop' || this.#stopped) return settle({ type: 'stopped' });
      if (gone !== undefined) return settle({ type: 'gone', message: gone });
      if (current.reason === 'silent') return settle({ type: 'silent' });
      if (failure) return settle({ type: 'error', err: failure, delivered });
      if (err) {
        const e = err as Error & { statusCode?: number };
        if (isGone(e.statusCode)) return settle({ type: 'gone', message: e.message });
        if (e.name === 'TimeoutError') return settle({ type: 'silent' });
        const message = e.statusCode ? `HTTP ${e.statusCode} ${e.message}` : e.message;
        return settle({ type: 'error', err: new Error(message, { cause: err }), delivered });
      }
      settle({ type: 'closed', delivered });
    };

    const timeoutSeconds = this.#o.watchTimeoutSeconds?.() ?? Math.floor(300 + Math.random() * 300);
    watch(this.#o.client, collectionPath(resource), {
      query: { allowWatchBookmarks: true, resourceVersion: this.#rv, timeoutSeconds },
      onEvent: (event, chars) => onEvent(event.type, event.object as WatchObject, chars),
      onDone,
      // Past our own watchdog, where it still covers a connect that hangs (our watchdog only sees open streams).
      inactivityMs: Math.max(staleAfterMs * 2, 1_000),
    }).then((controller) => {
      current.abort = controller;
      if (current.reason || this.#stopped) controller.abort();
      // Still open (a refused watch has settled by now): the API server answered it 200, so the kind works
      // again, even before a quiet kind has an event to deliver (a real one sends its first bookmark about two
      // minutes later).
      else if (this.#current === current) this.#failures = 0;
    });
    return promise;
  }
}
