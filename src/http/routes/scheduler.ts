// The four extender verbs. Handlers only translate: the decisions live in src/extender.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { BadRequestError } from '../../extender/deps.ts';
import { confirmClaimsOfRejection, filter, fitsNowhere } from '../../extender/filter.ts';
import { preempt } from '../../extender/preempt.ts';
import { prioritize } from '../../extender/prioritize.ts';
import * as wire from '../../extender/wire.ts';
import type { Admission } from '../admission.ts';
import type { AppDeps } from '../app.ts';
import { Answer } from '../errors.ts';
import { BINDING_ARGS_EXAMPLES, EXTENDER_ARGS_EXAMPLES, PREEMPTION_ARGS_EXAMPLES, withExamples } from '../examples.ts';
import { verbPipeline } from '../verb-pipeline.ts';
import type { VerbQueue } from '../verb-queue.ts';

/** The verbs, each through the verb pipeline (src/http/verb-pipeline.ts): its handler runs in `queue`'s turn. */
export function schedulerRoutes(deps: AppDeps, admission: Admission, queue: VerbQueue): FastifyPluginAsyncTypebox {
  const stages = { admission, queue, metrics: deps.metrics, synced: deps.started };
  return verbPipeline(stages, async (app) => {
    // The verbs build their answers field by field in the wire shape; the response schemas document them (OpenAPI)
    // and JSON.stringify writes them, a quarter faster than schema-driven serialisation on 500-node answers.
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));

    // Before schema validation, so that nothing (Ajv, the verbs, the echo of non-cache filter) walks such a body.
    // A callback hook, not an async one: every verb passes it, and a promise per request is allocation and a
    // microtask for nothing.
    app.addHook('preValidation', (request, _reply, done) => {
      const path = wire.tooDeeplyNested(request.body);
      if (path === undefined) return done();
      const shown = path.split('/').slice(0, 6).join('/');
      done(new BadRequestError(`body${shown}/… is nested deeper than ${wire.MAX_NESTING} levels`));
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
      async (request) => {
        const extender = { ...deps.extender, logger: request.log };
        const seen = filter(request.body, extender);
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
      (request) => prioritize(request.body, deps.extender),
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
      (request) =>
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
      async (request) => {
        const result = await deps.binder.bind(request.body, request.log);
        if (result.Error) request.verbError = true;
        return result;
      },
    );
  });
}
