// CLI entry: `serve` with flags, environment and a config file; picks the cluster state source (cluster-state file or API
// server), wires the extender, listens, and shuts down gracefully on SIGTERM/SIGINT.
import closeWithGrace from 'close-with-grace';
import { pino } from 'pino';
import { ANALYZE_USAGE, analyze } from './cli/analyze.ts';
import { makeApiListers } from './cluster/kube/listers.ts';
import { KubeSource } from './cluster/kube/source.ts';
import { KubeWriter } from './cluster/kube/writer.ts';
import { loadKubeConfig } from './cluster/kubeconfig.ts';
import { ClusterStateSource } from './cluster/state-file/source.ts';
import { VolumeController } from './cluster/state-file/volume-controller.ts';
import { ClusterStateWriter } from './cluster/state-file/writer.ts';
import { loadSettings, type Settings, SettingsError, settingsHelp } from './config.ts';
import { createExtender, type ExtenderParts, VERSION } from './wiring.ts';

const USAGE = `topology-extender ${VERSION}: kube-scheduler extender for topology-aware volume binding

Usage: topology-extender serve [settings]
${ANALYZE_USAGE}
Cluster state comes from --cluster-state FILE (YAML or JSON as kubectl prints it, watched for edits), or from an
API server: --kubeconfig FILE, --in-cluster, or kubectl's default (KUBECONFIG, ~/.kube/config).

Settings (flag, environment variable):
${settingsHelp()}
`;

function sourceParts(settings: Settings, logger: pino.Logger): Omit<ExtenderParts, 'settings' | 'logger'> {
  if (settings.clusterState) {
    const source = new ClusterStateSource({
      file: settings.clusterState,
      logger: logger.child({ component: 'cluster-state' }),
    });
    const writer = new ClusterStateWriter(source);
    if (!settings.simulateVolumeController) return { source, writer };
    const controllerLog = logger.child({ component: 'volume-controller' });
    return { source, writer, onStore: (store) => new VolumeController(store, source, controllerLog).start() };
  }
  const kubeConfig = loadKubeConfig({ kubeconfig: settings.kubeconfig, inCluster: settings.inCluster });
  return {
    source: new KubeSource({
      kubeConfig,
      logger: logger.child({ component: 'kube-source' }),
      pageSize: settings.listPageSize,
      staleAfterMs: settings.watchStaleSeconds * 1000,
    }),
    writer: new KubeWriter({ kubeConfig, logger: logger.child({ component: 'kube-writer' }) }),
    listFromSource: makeApiListers(kubeConfig, { pageSize: settings.listPageSize }),
  };
}

async function serve(argv: string[]): Promise<void> {
  let settings: Settings;
  try {
    settings = loadSettings(argv);
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    process.stderr.write(`topology-extender: ${err.message}\n`);
    process.exit(1);
  }
  const logger = pino({ level: settings.logLevel, base: { service: 'topology-extender' } });
  let extender: Awaited<ReturnType<typeof createExtender>>;
  try {
    extender = await createExtender({ settings, logger, ...sourceParts(settings, logger) });
  } catch (err) {
    process.stderr.write(`topology-extender: ${(err as Error).message}\n`);
    process.exit(1);
  }

  closeWithGrace({ delay: settings.shutdownGraceSeconds * 1000, logger }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an uncaught error');
    else logger.info({ signal }, 'shutting down');
    await extender.close();
  });

  const start = async () => {
    try {
      await extender.start();
    } catch (err) {
      logger.fatal({ err }, 'cannot load the cluster state');
      process.stderr.write(`topology-extender: ${(err as Error).message}\n`);
      await extender.app.close();
      process.exit(1);
    }
  };
  // A cluster-state file loads in moments and a bad one ends the process: load it before listening, so that such a
  // failure is never preceded by "listening". A live cluster's first lists may take long: /healthz answers meanwhile.
  const loadFirst = Boolean(settings.clusterState);
  if (loadFirst) await start();
  const address = await extender.app.listen({ host: settings.host, port: settings.port });
  logger.info({ address }, 'listening');
  if (!loadFirst) await start();
}

const [command = 'serve', ...rest] = process.argv.slice(2);
if (command === '--help' || command === '-h' || command === 'help' || rest.includes('--help')) {
  process.stdout.write(USAGE);
} else if (command === 'explain' || command === 'simulate') {
  try {
    process.stdout.write(await analyze(command, rest));
  } catch (err) {
    // Bad arguments, an unreadable file, a pod that is not there: one line naming it, exit status 1.
    process.stderr.write(`topology-extender ${command}: ${(err as Error).message}\n`);
    process.exit(1);
  }
} else if (command === 'serve') {
  await serve(rest);
} else if (command.startsWith('--')) {
  await serve(process.argv.slice(2));
} else {
  process.stderr.write(`topology-extender: unknown command "${command}"\n\n${USAGE}`);
  process.exit(1);
}
