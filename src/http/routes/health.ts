// Probes and metrics. /healthz is the process only; /readyz tells kube-scheduler's operators whether our view of the
// cluster can be trusted: every kind the verbs read listed once and no watch stale. The analysis-only kinds never hold
// readiness back; those missing are listed as unavailable.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ANALYSIS_ONLY_KINDS, unavailableKinds } from '../../cluster/analysis-kinds.ts';
import type { AppDeps } from '../app.ts';
import { Answer } from '../errors.ts';

const Readiness = Type.Object({
  ready: Type.Boolean(),
  source: Type.String(),
  notSynced: Type.Array(Type.String(), { description: 'Kinds not listed yet' }),
  stale: Type.Array(Type.String(), { description: 'Kinds whose list or watch failed three times in a row' }),
  unavailable: Type.Array(Type.String(), {
    description:
      'Kinds only explain and simulate read (Services, controllers, Namespaces) that cannot be listed or followed now: ' +
      'not needed for readiness; explain and simulate say what they could not model',
  }),
});

/** What the probes and metrics read: served by the app and, with --health-port, by the health listener too. */
export type HealthDeps = Pick<AppDeps, 'source' | 'started' | 'metrics'>;

export function healthRoutes(deps: HealthDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/healthz',
      {
        schema: {
          tags: ['health'],
          summary: 'Liveness: the process serves',
          response: { 200: Answer('The process serves', Type.Object({ status: Type.Literal('ok') })) },
        },
      },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/readyz',
      {
        schema: {
          tags: ['health'],
          summary: 'Readiness: every kind the verbs read synced and no watch of them stale',
          response: {
            200: Answer('Ready: every kind the verbs read listed, no watch of them stale', Readiness),
            503: Answer('Not ready: the kinds not listed yet or whose watch is stale', Readiness),
          },
        },
      },
      async (_request, reply) => {
        const all = deps.source.status();
        const kinds = all.filter((k) => !ANALYSIS_ONLY_KINDS.has(k.kind));
        const notSynced = kinds.filter((k) => !k.synced).map((k) => k.kind);
        const stale = kinds.filter((k) => k.synced && k.stale).map((k) => k.kind);
        const unavailable = unavailableKinds(all).map((k) => k.kind);
        const ready = deps.started() && notSynced.length === 0 && stale.length === 0;
        const body = { ready, source: deps.source.description, notSynced, stale, unavailable };
        return reply.code(ready ? 200 : 503).send(body);
      },
    );

    app.get(
      '/metrics',
      {
        schema: {
          tags: ['health'],
          summary: 'Prometheus metrics',
          produces: ['text/plain'],
          response: { 200: Answer('Prometheus text exposition', Type.String()) },
        },
      },
      async (_request, reply) => {
        reply.type(deps.metrics.registry.contentType);
        return deps.metrics.registry.metrics();
      },
    );
  };
}
