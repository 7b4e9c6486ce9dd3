// The health listener (--health-port): /healthz, /readyz and /metrics alone, plain HTTP, for kubelet's probes and
// Prometheus when the verbs listen where they cannot reach (kube-scheduler's loopback in the chart's mode scheduler).
// Nothing else is routed here, so the verbs and the ops API never become reachable through it.
import Fastify, { LogController } from 'fastify';
import type { Logger } from 'pino';
import { closeConnectionsOnceAnswered } from './drain.ts';
import { type HealthDeps, healthRoutes } from './routes/health.ts';

export async function buildHealthApp(deps: HealthDeps & { logger: Logger }) {
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
  });
  // Prometheus scrapes over keep-alive connections: one scrape in flight must not hold shutdown for
  // Fastify's keepAliveTimeout (72 s).
  const drain = closeConnectionsOnceAnswered();
  app.addHook('preClose', drain.preClose);
  app.addHook('onSend', drain.onSend);
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ statusCode: 404, error: 'Not Found', message: `no route ${request.method} ${request.url}` }),
  );
  await app.register(healthRoutes(deps));
  return app;
}
