// The one path every scheduler verb takes. Admission has admitted the request from its headers (src/http/admission.ts,
// an onRequest hook for every route); then each verb, whatever it is:
//   1. waits until the cluster has been listed, else is answered 503 (not_synced) uncomputed;
//   2. runs in its turn of the verb queue (src/http/verb-queue.ts), or is answered 503 uncomputed when its client left
//      or it waited past its deadline; once it starts, admission no longer counts it as waiting;
//   3. has its outcome and duration recorded in /metrics.
// The stages are attached to each route as it is declared (a closure per route, the verb known then), so that a verb
// added to the table cannot skip one (preempt once did: never dropped, never counted as started), and no request looks
// its route up to learn its verb.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, onResponseHookHandler, preHandlerHookHandler, RouteHandlerMethod } from 'fastify';
import type { Admission } from './admission.ts';
import { clientGone } from './client-gone.ts';
import type { Metrics, Verb } from './metrics.ts';
import { VerbDropped, type VerbQueue } from './verb-queue.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    verb?: Verb;
  }
  interface FastifyRequest {
    /** Set when the answer carries an `Error` (a failed bind, an internal filter failure). */
    verbError?: boolean;
    /** Set when the verb was answered 503 without being computed (admission, not synced, VerbQueue). */
    verbDropped?: boolean;
  }
}

export interface VerbStages {
  admission: Pick<Admission, 'started'>;
  queue: VerbQueue;
  metrics: Pick<Metrics, 'verbDropped' | 'verbResults' | 'verbDuration'>;
  /** True once every kind the verbs read has been listed. */
  synced: () => boolean;
}

const NOT_SYNCED =
  'the extender has not listed the cluster yet (just started): no verdict from a partial view; retry after backoff';

/**
 * The plugin serving `table`, a verb route table: every route it declares names its verb (`config.verb`) and passes
 * every stage. A route without a verb fails the app's build.
 */
export function verbPipeline(stages: VerbStages, table: FastifyPluginAsyncTypebox): FastifyPluginAsyncTypebox {
  return async (app, options) => {
    app.addHook('onRoute', (route) => {
      const verb = route.config?.verb;
      if (!verb) throw new Error(`${route.method} ${route.url}: a verb route names its verb (config.verb)`);
      route.preHandler = [...hooks(route.preHandler), untilSynced(stages, verb)];
      route.onResponse = [...hooks(route.onResponse), recordOutcome(stages.metrics, verb)];
      route.handler = inTurn(stages, verb, route.handler);
    });
    await table(app, options);
  };
}

const hooks = <H>(declared: H | H[] | undefined): H[] =>
  declared === undefined ? [] : Array.isArray(declared) ? declared : [declared];

/**
 * Until every kind has been listed once, our view is empty or partial: a verdict from it ("not in the extender's
 * cache", a claim not found) would mark the pod unschedulable until some cluster event requeues it, and a bind could
 * miss what is already taken. An error fails kube-scheduler's attempt instead (ignorable: false), and it retries the
 * pod after its backoff. Seen with a real kube-scheduler retrying pods across our restart.
 * A callback hook, not an async one: a promise per request for nothing.
 */
function untilSynced({ synced, metrics }: VerbStages, verb: Verb): preHandlerHookHandler {
  return (request, reply, done) => {
    if (synced()) return done();
    request.verbDropped = true;
    metrics.verbDropped.inc({ verb, reason: 'not_synced' });
    reply.code(503).send({ statusCode: 503, error: 'Service Unavailable', message: NOT_SYNCED });
  };
}

/**
 * The handler run in its turn (VerbQueue), whole: a verb's synchronous part holds the loop there, and what it awaits
 * (a bind's API writes) goes on while the next verb starts. Once started a verb runs to its end, whoever still waits
 * for it: a bind is never abandoned between its writes. A dropped verb is answered 503 with the reason.
 */
function inTurn({ admission, queue }: VerbStages, verb: Verb, handler: RouteHandlerMethod): RouteHandlerMethod {
  return async function (this: FastifyInstance, request, reply) {
    try {
      return await queue.run(
        { verb, arrivedAt: queue.now() - reply.elapsedTime, gone: () => clientGone(request.raw) },
        () => {
          admission.started(request.raw);
          return handler.call(this, request, reply);
        },
      );
    } catch (err) {
      if (!(err instanceof VerbDropped)) throw err;
      request.verbDropped = true;
      request.log.warn({ verb, reason: err.reason }, err.message);
      return reply.code(503).send({ statusCode: 503, error: 'Service Unavailable', message: err.message });
    }
  };
}

/** Every answer of the verb, computed or not (refused by admission, a bad body, dropped), by outcome. */
function recordOutcome(metrics: VerbStages['metrics'], verb: Verb): onResponseHookHandler {
  return (request, reply, done) => {
    const code = reply.statusCode;
    const outcome = request.verbDropped
      ? 'dropped'
      : code >= 500
        ? 'failed'
        : code >= 400
          ? 'rejected'
          : request.verbError
            ? 'error'
            : 'ok';
    metrics.verbResults.inc({ verb, outcome });
    metrics.verbDuration.observe({ verb }, reply.elapsedTime / 1000);
    done();
  };
}
