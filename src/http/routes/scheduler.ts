// The four extender verbs. Handlers only translate: the decisions live in src/extender.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BadRequestError } from '../../extender/deps.ts';
import { confirmClaimsOfRejection, filter, fitsNowhere } from '../../extender/filter.ts';
import { preempt } from '../../extender/preempt.ts';
import { prioritize } from '../../extender/prioritize.ts';
import * as wire from '../../extender/wire.ts';
import type { Admission } from '../admission.ts';
import type { AppDeps } from '../app.ts';
import { clientGone } from '../client-gone.ts';
import { Answer } from '../errors.ts';
import { BINDING_ARGS_EXAMPLES, EXTENDER_ARGS_EXAMPLES, PREEMPTION_ARGS_EXAMPLES, withExamples } from '../examples.ts';
import type { Verb } from '../metrics.ts';
import { VerbDropped, type VerbQueue } from '../verb-queue.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    verb?: Verb;
  }
  interface FastifyRequest {
    /** Set when the answer carries an `Error` (a failed bind, an internal filter failure). */
    verbError?: boolean;
    /** Set when the verb was answered 503 without being computed (see VerbQueue). */
    verbDropped?: boolean;
  }
}

const NOT_SYNCED =
  'the extender has not listed the cluster yet (just started): no verdict from a partial view; retry after backoff';

/** The verbs run in `queue`'s turn; one that starts no longer counts as waiting for `admission`. */
export function schedulerRoutes(deps: AppDeps, admission: Admission, queue: VerbQueue): FastifyPluginAsyncTypebox {
  return async (app) => {
    /** Runs a verb in its turn (VerbQueue); a dropped one is answered 503 with the reason. */
    const inTurn = async <T>(
      request: FastifyRequest,
      reply: FastifyReply,
      work: () => T | PromiseLike<T>,
    ): Promise<T> => {
      const verb = request.routeOptions.config.verb ?? request.url;
      try {
        return await queue.run(
          { verb, arrivedAt: queue.now() - reply.elapsedTime, gone: () => clientGone(request.raw) },
          () => {
            admission.started(request.raw);
            return work();
          },
        );
      } catch (err) {
        if (!(err instanceof VerbDropped)) throw err;
        request.verbDropped = true;
        request.log.warn({ verb, reason: err.reason }, err.message);
        return reply
          .code(503)
          .send({ statusCode: 503, error: 'Service Unavailable', message: err.message }) as unknown as T;
      }
    };

    // The verbs build their answers field by field in the wire shape; the response schemas document them (OpenAPI)
    // and JSON.stringify writes them, a quarter faster than schema-driven serialisation on 500-node answers.
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));

    // Before schema validation, so that nothing (Ajv, the verbs, the echo of non-cache filter) walks such a body.
    // Callback hooks, not async ones: every verb passes both, and a promise per hook per request is allocation and a
    // microtask for nothing.
    app.addHook('preValidation', (request, _reply, done) => {
      const path = wire.tooDeeplyNested(request.body);
      if (path === undefined) return done();
      const shown = path.split('/').slice(0, 6).join('/');
      done(new BadRequestError(`body${shown}/… is nested deeper than ${wire.MAX_NESTING} levels`));
    });

    // Until every kind has been listed once, our view is empty or partial: a verdict from it ("not in the extender's
    // cache", a claim not found) would mark the pod unschedulable until some cluster event requeues it, and a bind
    // could miss what is already taken. An error fails kube-scheduler's attempt instead (ignorable: false), and it
    // retries the pod after its backoff. Seen with a real kube-scheduler retrying pods across our restart.
    app.addHook('preHandler', (request, reply, done) => {
      if (deps.started()) return done();
      const verb = request.routeOptions.config.verb ?? request.url;
      request.verbDropped = true;
      deps.metrics.verbDropped.inc({ verb, reason: 'not_synced' });
      reply.code(503).send({ statusCode: 503, error: 'Service Unavailable', message: NOT_SYNCED });
    });

    app.addHook('onResponse', (request, reply, done) => {
      const verb = request.routeOptions.config.verb;
      if (verb) {
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
        deps.metrics.verbResults.inc({ verb, outcome });
        deps.metrics.verbDuration.observe({ verb }, reply.elapsedTime / 1000);
      }
      done();
    });

    app.post(
      '/filter',
      {
        config: { verb: 'filter' },
        schema: {
          tags: ['scheduler'],
          summary:
            "Filter candidate nodes by the pod's volumes (binding, zone, RWOP, attach limits), counting pods nominated there",
          body: withExamples(wire.ExtenderArgs, EXTENDER_ARGS_EXAMPLES),
          response: { 200: wire.ExtenderFilterResult },
        },
      },
      async (request, reply) => {
        const extender = { ...deps.extender, logger: request.log };
        const seen = await inTurn(request, reply, () => filter(request.body, extender));
        // The reply was sent already when the verb was dropped (503).
        if (reply.sent) return reply;
        const result = await confirmClaimsOfRejection(request.body, seen, extender);
        if (result.Error) request.verbError = true;
        else if (fitsNowhere(result)) void deps.nodeNominator?.afterRejection(request.body);
        return result;
      },
    );

    app.post(
      '/prioritize',
      {
        config: { verb: 'prioritize' },
        schema: {
          tags: ['scheduler'],
          summary: 'Score candidate nodes (integers 0..10)',
          body: withExamples(wire.ExtenderArgs, EXTENDER_ARGS_EXAMPLES),
          response: { 200: wire.HostPriorityList },
        },
      },
      (request, reply) => inTurn(request, reply, () => prioritize(request.body, deps.extender)),
    );

    app.post(
      '/preempt',
      {
        config: { verb: 'preempt' },
        schema: {
          tags: ['scheduler'],
          summary:
            "Keep the candidates where evicting makes room for the pod's volumes; add the RWOP and attach-slot holders it needs",
          body: withExamples(wire.ExtenderPreemptionArgs, PREEMPTION_ARGS_EXAMPLES),
          response: { 200: wire.ExtenderPreemptionResult },
        },
      },
      async (request) =>
        preempt(request.body, { ...deps.extender, logger: request.log }, (outcome) => {
          if (outcome.kept > 0) deps.metrics.preemptNodes.inc({ result: 'kept', reason: '' }, outcome.kept);
          for (const [reason, n] of outcome.dropped) deps.metrics.preemptNodes.inc({ result: 'dropped', reason }, n);
          if (outcome.victimsAdded > 0) deps.metrics.preemptVictimsAdded.inc(outcome.victimsAdded);
        }),
    );

    app.post(
      '/bind',
      {
        config: { verb: 'bind' },
        schema: {
          tags: ['scheduler'],
          summary: "Bind the pod's delegated volumes, then the pod, to a node",
          body: withExamples(wire.ExtenderBindingArgs, BINDING_ARGS_EXAMPLES),
          response: {
            200: Answer(
              'Bound (Error empty), or an Error saying why not; every assumption reverted',
              wire.ExtenderBindingResult,
            ),
          },
        },
      },
      (request, reply) =>
        inTurn(request, reply, async () => {
          const result = await deps.binder.bind(request.body, request.log);
          if (result.Error) request.verbError = true;
          return result;
        }),
    );
  };
}
