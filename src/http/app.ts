// The Fastify app as a plugin-free factory: routes, schemas, OpenAPI, error mapping. No listen here (main.ts does it),
// so tests build the app and talk to it in-process.

import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyError, type FastifyRequest, LogController, type RouteOptions } from 'fastify';
import type { Logger } from 'pino';
import type { Source } from '../cluster/source.ts';
import type { PodBinder } from '../extender/bind.ts';
import type { ExtenderDeps } from '../extender/deps.ts';
import type { NodeNominator } from '../extender/nominate.ts';
import type { PendingReport } from '../ops/pending-report.ts';
import type { VolumePluginsSettings } from '../plugins/index.ts';
import {
  Admission,
  type AdmissionLimits,
  admissionGauges,
  admitRequest,
  answerOverloaded,
  countUnsizedBody,
  Overloaded,
} from './admission.ts';
import { answerClientError } from './client-error.ts';
import { closeConnectionsOnceAnswered } from './drain.ts';
import {
  BODY_ERRORS,
  bodyTooLargeMessage,
  documentResponses,
  OVERLOADED,
  schemaErrorMessage,
  UNAUTHORIZED,
} from './errors.ts';
import { RouteMethods } from './methods.ts';
import type { Metrics } from './metrics.ts';
import { analysisRoutes } from './routes/analysis.ts';
import { healthRoutes } from './routes/health.ts';
import { opsRoutes } from './routes/ops.ts';
import { reportRoutes } from './routes/report.ts';
import { schedulerRoutes } from './routes/scheduler.ts';
import { reloadOnChange, requireClientCertificate, secureServerOptions, type TlsFiles } from './tls.ts';
import { VerbQueue } from './verb-queue.ts';

export interface AppDeps {
  extender: ExtenderDeps;
  /** The volume plugins' settings: simulate builds its private copy with the same ones. */
  pluginSettings: VolumePluginsSettings;
  binder: PodBinder;
  source: Source;
  metrics: Metrics;
  logger: Logger;
  bodyLimit: number;
  /** Limits on connections, request bodies held and verbs waiting (src/http/admission.ts). */
  admission: AdmissionLimits;
  /** How long a verb may wait for the verbs queued before it (kube-scheduler's httpTimeout): then it is dropped. */
  verbDeadlineSeconds: number;
  /** True once the source's initial lists are in the store. */
  started: () => boolean;
  /** Differences between the cache and a fresh list from the source of truth. */
  cacheDiff: () => Promise<unknown>;
  version: string;
  /** Serve HTTPS (HTTP/2 with HTTP/1.1 fallback) from these files instead of plain HTTP/1.1. */
  tls?: TlsFiles;
  /** The pending report kept current in the background (GET /api/v1/pending reads it), and whose pods it covers. */
  pending: PendingReport;
  schedulerNames: readonly string[];
  /** With full delegation: after a filter that passed no node, nominates the node where the pod fits. */
  nodeNominator?: NodeNominator;
}

export async function buildApp(deps: AppDeps) {
  const transport = deps.tls ? { http2: true, https: secureServerOptions(deps.tls) } : {};
  const app = Fastify({
    ...(transport as object),
    loggerInstance: deps.logger,
    bodyLimit: deps.bodyLimit,
    // kube-scheduler's keep-alive connections outlive Node's 5 s default; drop idle ones only after a minute.
    keepAliveTimeout: 65_000,
    requestIdHeader: 'x-request-id',
    clientErrorHandler: answerClientError,
    schemaErrorFormatter: schemaErrorMessage,
    // Per-request lines at 800 pods/s drown the log; failures, rejections and binds are logged where they happen.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: {
      // Wrong types are errors, not something to coerce; unknown fields pass through untouched.
      // `x-examples`: named request examples for the OpenAPI document (src/http/examples.ts), not a rule.
      customOptions: {
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allErrors: false,
        keywords: ['x-examples'],
        // The optimiser only drops unused names from the generated code, and to do so it builds records keyed by
        // every name of every validator: thousands of property names that fill V8's root map for objects built from
        // `{}`, after which every stored object of a new shape gets a map of its own (test/http/v8-shapes.test.ts).
        code: { optimize: false },
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  if (deps.tls) {
    const stopWatching = reloadOnChange(app.server as unknown as TlsServer, deps.tls, deps.logger);
    app.addHook('onClose', async () => stopWatching());
  }

  const drain = closeConnectionsOnceAnswered();
  app.addHook('preClose', drain.preClose);
  app.addHook('onSend', drain.onSend);

  // Every body we accept is JSON; anything else is refused with 415 instead of failing validation as a string.
  app.removeContentTypeParser('text/plain');
  // The probes and /metrics are always served: a refused liveness probe would restart an overloaded pod.
  const exempt = (url: string | undefined) => url === '/healthz' || url === '/readyz' || url === '/metrics';
  // The verbs run one at a time (src/http/verb-queue.ts); admission reads how much work waits there.
  let accepted = 0;
  app.server.on('connection', () => accepted++);
  const queue = new VerbQueue({
    accepted: () => accepted,
    deadlineMs: deps.verbDeadlineSeconds * 1000,
    onDrop: (verb, reason) => deps.metrics.verbDropped.inc({ verb, reason }),
    onStart: (verb, waitedMs) => {
      deps.metrics.verbStarted.inc({ verb });
      deps.metrics.verbQueueWait.observe({ verb }, waitedMs / 1000);
    },
    onComputed: (verb, ms, cpuMs) => {
      deps.metrics.verbCompute.observe({ verb }, ms / 1000);
      deps.metrics.verbComputeCpu.observe({ verb }, cpuMs / 1000);
    },
    onDepth: (depth) => deps.metrics.verbQueueDepth.set(depth),
  });
  // The pending report works between verbs only: never while one is queued nor right after one answered (the next
  // verb of kube-scheduler's cycle comes then), and less while they come (the queue's clock is performance.now(), the
  // report's too).
  deps.pending.yieldTo(
    () => queue.depth() > 0,
    () => queue.lastArrival(),
    () => queue.lastAnswer(),
  );
  const admission = new Admission(
    deps.admission,
    deps.bodyLimit,
    (reason) => deps.metrics.admissionRejected.inc({ reason }),
    queue,
  );
  admissionGauges(deps.metrics.registry, admission);
  const routes = {
    verb: (request: FastifyRequest) => request.routeOptions.config.verb,
    exempt: (request: FastifyRequest) => exempt(request.routeOptions.url),
  };
  // HTTPS: requests see the TLS socket, counted once its handshake is done.
  app.server.on(deps.tls ? 'secureConnection' : 'connection', (socket: Socket) => admission.connected(socket));
  app.addHook('onRequest', admitRequest(admission, routes));
  app.addHook('preParsing', countUnsizedBody(admission, routes));
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof Overloaded) return answerOverloaded(request, reply, err.reason, err.message);
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
    if (status >= 500) {
      request.log.error({ err }, 'request failed');
      return reply
        .code(status)
        .send({ statusCode: status, error: 'Internal Server Error', message: 'internal error; see the extender log' });
    }
    const message =
      err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? `Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')} is not supported: send application/json`
        : err.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
          ? bodyTooLargeMessage(deps.bodyLimit)
          : err.message;
    request.log.info({ err: { code: err.code, message } }, 'request rejected');
    return reply.code(status).send({ statusCode: status, code: err.code, error: STATUS_CODES[status], message });
  });
  const methods = new RouteMethods();
  app.addHook('onRoute', methods.add);
  app.setNotFoundHandler((request, reply) => {
    const allow = methods.allowed(request.url);
    if (!allow)
      return reply
        .code(404)
        .send({ statusCode: 404, error: 'Not Found', message: `no route ${request.method} ${request.url}` });
    const message = `${request.method} ${request.url.split('?', 1)[0]}: this route takes ${allow.join(' or ')} only`;
    return reply
      .code(405)
      .header('allow', allow.join(', '))
      .send({ statusCode: 405, error: 'Method Not Allowed', message });
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'topology-extender',
        description:
          'kube-scheduler extender for topology-aware volume binding. The /scheduler verbs follow ' +
          'k8s.io/kube-scheduler/extender/v1 (PascalCase keys); /api/v1 is the operator view of the scheduler cache.',
        version: deps.version,
      },
      tags: [
        { name: 'scheduler', description: 'Extender verbs called by kube-scheduler' },
        { name: 'ops', description: 'Operator views of the cache' },
        { name: 'analysis', description: 'Explain and what-if: read the cache, never change it' },
        { name: 'health', description: 'Probes and metrics' },
      ],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const clientCa = Boolean(deps.tls?.clientCaFile);
  const hasBody = (route: RouteOptions) => [route.method].flat().includes('POST');
  app.addHook('onRoute', documentResponses(BODY_ERRORS, hasBody));
  app.addHook(
    'onRoute',
    documentResponses(OVERLOADED, (route) => !exempt(route.url)),
  );
  await app.register(async (protectedRoutes) => {
    // With a client CA, only the scheduler (and operators holding a certificate) may call the verbs and the ops API.
    if (clientCa) protectedRoutes.addHook('onRequest', requireClientCertificate);
    // Documented whether or not this server has a client CA: the document is the same for every configuration.
    protectedRoutes.addHook(
      'onRoute',
      documentResponses(UNAUTHORIZED, () => true),
    );
    await protectedRoutes.register(schedulerRoutes(deps, admission, queue), { prefix: '/scheduler' });
    await protectedRoutes.register(opsRoutes(deps), { prefix: '/api/v1' });
    await protectedRoutes.register(analysisRoutes(deps), { prefix: '/api/v1' });
    await protectedRoutes.register(reportRoutes(deps), { prefix: '/api/v1' });
  });
  await app.register(healthRoutes(deps));
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  return app;
}
