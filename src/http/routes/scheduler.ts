// The four extender verbs. Handlers only translate: the decisions live in src/extender.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { filter } from '../../extender/filter.ts';
import { preempt } from '../../extender/preempt.ts';
import { prioritize } from '../../extender/prioritize.ts';
import * as wire from '../../extender/wire.ts';
import type { AppDeps } from '../app.ts';
import type { Verb } from '../metrics.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    verb?: Verb;
  }
  interface FastifyRequest {
    /** Set when the answer carries an `Error` (a failed bind, an internal filter failure). */
    verbError?: boolean;
  }
}

export function schedulerRoutes(deps: AppDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    // The verbs build their answers field by field in the wire shape; the response schemas document them (OpenAPI)
    // and JSON.stringify writes them, a quarter faster than schema-driven serialisation on 500-node answers.
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));

    app.addHook('onResponse', async (request, reply) => {
      const verb = request.routeOptions.config.verb;
      if (!verb) return;
      const code = reply.statusCode;
      const outcome = code >= 500 ? 'failed' : code >= 400 ? 'rejected' : request.verbError ? 'error' : 'ok';
      deps.metrics.verbResults.inc({ verb, outcome });
      deps.metrics.verbDuration.observe({ verb }, reply.elapsedTime / 1000);
    });

    app.post(
      '/filter',
      {
        config: { verb: 'filter' },
        schema: {
          tags: ['scheduler'],
          summary: 'Filter candidate nodes for a pod',
          body: wire.ExtenderArgs,
          response: { 200: wire.ExtenderFilterResult },
        },
      },
      async (request) => {
        const result = filter(request.body, { ...deps.extender, logger: request.log });
        if (result.Error) request.verbError = true;
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
          body: wire.ExtenderArgs,
          response: { 200: wire.HostPriorityList },
        },
      },
      async (request) => prioritize(request.body, deps.extender),
    );

    app.post(
      '/preempt',
      {
        config: { verb: 'preempt' },
        schema: {
          tags: ['scheduler'],
          summary:
            "Keep the candidates where evicting makes room for the pod's volumes; add the RWOP and attach-slot holders it needs",
          body: wire.ExtenderPreemptionArgs,
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
          body: wire.ExtenderBindingArgs,
          response: { 200: wire.ExtenderBindingResult },
        },
      },
      async (request) => {
        const result = await deps.binder.bind(request.body, request.log);
        if (result.Error) request.verbError = true;
        return result;
      },
    );
  };
}
