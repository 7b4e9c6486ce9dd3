// Builds one extender from its parts: store ← source, cache and volume plugins ← store, verbs ← framework, app ← verbs.
// main.ts picks the source and writer (cluster-state file or API server); tests pass their own.
import type { Logger } from 'pino';
import type { Source } from './cluster/source.ts';
import { ClusterStore } from './cluster/store.ts';
import type { Node, Pod } from './cluster/types.ts';
import type { ClusterWriter } from './cluster/writer.ts';
import type { Settings } from './config.ts';
import { PodBinder } from './extender/bind.ts';
import { buildExtenderDeps } from './extender/build.ts';
import { NodeNominator } from './extender/nominate.ts';
import { admissionLimits } from './http/admission.ts';
import { buildApp } from './http/app.ts';
import { buildHealthApp } from './http/health-app.ts';
import { createMetrics } from './http/metrics.ts';
import { compareCache } from './ops/cache-comparer.ts';
import { LIVE_EXPLAIN_AFTER_MS, PendingReport } from './ops/pending-report.ts';

export const VERSION = '0.1.0';

export interface ExtenderParts {
  settings: Settings;
  source: Source;
  writer: ClusterWriter;
  logger: Logger;
  /** A fresh list of pods and nodes from the source of truth, for the cache comparer. Default: the store. */
  listFromSource?: { listPods: () => Promise<Pod[]>; listNodes: () => Promise<Node[]> };
  /** Called with the store once it exists, before the source starts (the cluster-state file's simulated volume controller hooks in here). */
  onStore?: (store: ClusterStore) => void;
}

export async function createExtender(parts: ExtenderParts) {
  const { settings, source, writer, logger } = parts;
  const store = new ClusterStore({
    onHandlerError: (err, event) =>
      logger.error(
        { err, kind: event.kind, type: event.type, name: event.obj.metadata.name },
        'store subscriber failed',
      ),
  });
  const {
    deps: extender,
    cache,
    stop: closeSchedulingState,
  } = buildExtenderDeps({
    store,
    writer,
    logger,
    settings,
    assumedPodTTLms: settings.assumedPodTtlSeconds * 1000,
    onStore: parts.onStore,
    sourceStatus: () => source.status(),
    clusterVersion: () => settings.kubeVersion ?? source.serverVersion?.(),
    delegatedVolumeBinding: settings.delegatedVolumeBinding,
    clusterStateFile: source.file,
  });
  const binder = new PodBinder(extender);
  const list = parts.listFromSource ?? {
    listPods: async () => [...store.list('Pod')],
    listNodes: async () => [...store.list('Node')],
  };
  let started = false;
  // Started once the store is filled (start below): explaining pods of a half-listed cluster would be wasted work.
  const pending = new PendingReport(extender, {
    schedulerNames: settings.schedulerNames,
    // A cluster-state file has no kube-scheduler to try its pods: they are explained at once.
    explainAfterMs: source.file ? 0 : LIVE_EXPLAIN_AFTER_MS,
    logger: logger.child({ component: 'pending-report' }),
  });
  const nodeNominator = settings.nominateNodes
    ? new NodeNominator(extender, { schedulerNames: settings.schedulerNames })
    : undefined;
  const metrics = createMetrics({ cache, source, store, volumeBinder: extender.volumeBinder, pending, nodeNominator });
  const limits = admissionLimits(settings);
  logger.info(limits, 'admission limits');
  const app = await buildApp({
    extender,
    pluginSettings: settings,
    binder,
    source,
    metrics,
    logger,
    bodyLimit: settings.bodyLimit,
    admission: limits,
    verbDeadlineSeconds: settings.verbDeadlineSeconds,
    started: () => started,
    cacheDiff: () => compareCache({ cache, store, ...list }),
    version: VERSION,
    pending,
    schedulerNames: settings.schedulerNames,
    nodeNominator,
    tls:
      settings.tlsCertFile && settings.tlsKeyFile
        ? { certFile: settings.tlsCertFile, keyFile: settings.tlsKeyFile, clientCaFile: settings.clientCaFile }
        : undefined,
  });

  const healthApp =
    settings.healthPort === undefined
      ? undefined
      : await buildHealthApp({ source, metrics, started: () => started, logger });

  let stopReconciling = () => {};
  return {
    app,
    /** With --health-port: the probes and metrics alone, to listen on healthHost:healthPort (main.ts). */
    healthApp,
    store,
    cache,
    /** What the verbs read: call filter()/prioritize() directly with it (benchmarks, what-if tools). */
    verbs: extender,
    binder,
    source,
    /** Why every pending pod is pending, kept current in the background once started. */
    pending,
    /** With nominateNodes: the node set for pods kube-scheduler's sample of nodes missed (src/extender/nominate.ts). */
    nodeNominator,
    /** Fills the store from the source; rejects only for a source that cannot start at all (bad cluster-state file). */
    async start(): Promise<void> {
      await source.start(store);
      started = true;
      if (settings.pendingReport) pending.start();
      logger.info(
        { source: source.description, nodes: cache.nodeCount(), pods: cache.podCount() },
        'cluster state synced',
      );
      // Assumed pods the watch never confirmed are checked against the API, never dropped on a timer alone.
      stopReconciling = cache.startReconciling((ns, name) => writer.getPod(ns, name));
    },
    /** Stops taking requests, lets binds undo their assumptions, then stops the source. */
    async close(): Promise<void> {
      // A stage that holds up shutdown is named while it runs, not only once it ends: past --shutdown-grace-seconds
      // the process is killed mid-way, and the log must say where.
      const stage = async (what: string, step: () => unknown) => {
        const started = performance.now();
        const slow = setTimeout(() => logger.warn(`shutting down: still ${what} after 1 s`), 1_000);
        try {
          await step();
        } finally {
          clearTimeout(slow);
        }
        const ms = Math.round(performance.now() - started);
        if (ms >= 1_000) logger.warn({ ms }, `shutting down: ${what} took ${ms} ms`);
      };
      stopReconciling();
      pending.close();
      nodeNominator?.close();
      await stage('finishing the binds in flight', () => binder.close());
      await stage('closing the HTTP server', () => app.close());
      await stage('closing the health server', () => healthApp?.close());
      await stage('stopping the watches', () => source.stop());
      closeSchedulingState();
    },
  };
}

export type Extender = Awaited<ReturnType<typeof createExtender>>;
