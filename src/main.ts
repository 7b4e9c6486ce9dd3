// CLI entry: `serve` with flags, environment and a config file; picks the cluster state source (cluster-state file or API
// server), wires the extender, listens, and shuts down gracefully on SIGTERM/SIGINT. A failure an operator can fix
// (a port in use, a missing file, a bad kubeconfig) ends the process with one sentence on stderr and status 1; its
// stack is logged only at debug.
import closeWithGrace from 'close-with-grace';
import type { pino } from 'pino';
import { ANALYZE_COMMANDS, ANALYZE_USAGE, type AnalyzeCommand, analyze, COMMAND_USAGE } from './cli/analyze.ts';
import { ClusterStateSource } from './cluster/state-file/source.ts';
import { VolumeController } from './cluster/state-file/volume-controller.ts';
import { ClusterStateWriter } from './cluster/state-file/writer.ts';
import { loadSettings, type Settings, SettingsError, settingsHelp } from './config.ts';
import { createLogger, defaultLogFormat } from './log.ts';
import { createExtender, type ExtenderParts, VERSION } from './wiring.ts';

const USAGE = `topology-extender ${VERSION}: kube-scheduler extender for topology-aware volume binding

Usage:
  topology-extender serve [settings]   (the default command)
${ANALYZE_USAGE}  topology-extender COMMAND --help      a command's own help, with its flags
  topology-extender --version

Cluster state comes from --cluster-state FILE (YAML or JSON as kubectl prints it, watched for edits), or from an
API server: --kubeconfig FILE, --in-cluster, or kubectl's default (KUBECONFIG, ~/.kube/config).

Settings (flag, environment variable):
${settingsHelp()}
`;

async function sourceParts(
  settings: Settings,
  logger: pino.Logger,
): Promise<Omit<ExtenderParts, 'settings' | 'logger'>> {
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
  // client-node takes over half a second to load: only an API server source imports it, so a file starts without.
  const [{ loadKubeConfig }, { KubeSource }, { KubeWriter }, { makeApiListers }] = await Promise.all([
    import('./cluster/kubeconfig.ts'),
    import('./cluster/kube/source.ts'),
    import('./cluster/kube/writer.ts'),
    import('./cluster/kube/listers.ts'),
  ]);
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

/** Where a server listens, and the flags that set it, for the sentence an operator reads when it cannot. */
interface Listener {
  host: string;
  port: number;
  flags: [host: string, port: string];
}

/** The sentence an operator needs for a failure they can fix, or undefined for one that is a bug. */
function plainReason(err: unknown, listener: Listener): string | undefined {
  const e = err as NodeJS.ErrnoException & { hostname?: string };
  const { host, port, flags } = listener;
  const where = `${host}:${port}`;
  switch (e?.code) {
    case 'EADDRINUSE':
      return `cannot listen on ${where}: the port is already in use (choose another with --${flags[1]})`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: ${host} is not an address of this machine (see --${flags[0]})`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return `cannot listen on ${where}: no such host "${host}" (see --${flags[0]})`;
    case 'EACCES':
      return `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`;
  }
  return undefined;
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
  const logger = createLogger({ level: settings.logLevel, format: settings.logFormat ?? defaultLogFormat() });
  const fail = (err: unknown, sentence = (err as Error).message): never => {
    logger.debug({ err }, sentence);
    logger.flush?.();
    process.stderr.write(`topology-extender: ${sentence}\n`);
    process.exit(1);
  };
  let extender: Awaited<ReturnType<typeof createExtender>>;
  try {
    // Loading a kubeconfig (sourceParts) fails on a missing or malformed file: an operator's mistake, said plainly.
    extender = await createExtender({ settings, logger, ...(await sourceParts(settings, logger)) });
  } catch (err) {
    return fail(err);
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
      await extender.app.close();
      return fail(err);
    }
  };
  // A cluster-state file loads in moments and a bad one ends the process: load it before listening, so that such a
  // failure is never preceded by "listening". A live cluster's first lists may take long: /healthz answers meanwhile.
  const loadFirst = Boolean(settings.clusterState);
  if (loadFirst) await start();
  const listen = async (app: typeof extender.app | NonNullable<typeof extender.healthApp>, at: Listener) => {
    try {
      return await app.listen({ host: at.host, port: at.port });
    } catch (err) {
      const reason = plainReason(err, at);
      if (!reason) throw err;
      await extender.close().catch(() => {});
      return fail(err, reason);
    }
  };
  const address = await listen(extender.app, { host: settings.host, port: settings.port, flags: ['host', 'port'] });
  logger.info({ address }, 'listening');
  if (extender.healthApp && settings.healthPort !== undefined) {
    const at: Listener = {
      host: settings.healthHost,
      port: settings.healthPort,
      flags: ['health-host', 'health-port'],
    };
    logger.info({ address: await listen(extender.healthApp, at) }, 'health and metrics listening');
  }
  if (!loadFirst) await start();
}

const HELP = new Set(['--help', '-h', 'help']);
const [command = 'serve', ...rest] = process.argv.slice(2);
if (HELP.has(command)) {
  process.stdout.write(USAGE);
} else if (command === '--version' || command === 'version') {
  process.stdout.write(`topology-extender ${VERSION}\n`);
} else if (ANALYZE_COMMANDS.includes(command as AnalyzeCommand)) {
  if (rest.some((a) => a === '--help' || a === '-h')) {
    process.stdout.write(COMMAND_USAGE[command as AnalyzeCommand]);
  } else {
    try {
      process.stdout.write(await analyze(command as AnalyzeCommand, rest));
    } catch (err) {
      // Bad arguments, an unreadable file, a pod that is not there: one line naming it, exit status 1.
      process.stderr.write(`topology-extender ${command}: ${(err as Error).message}\n`);
      process.exit(1);
    }
  }
} else if (command === 'serve' || command.startsWith('--')) {
  const args = command === 'serve' ? rest : process.argv.slice(2);
  if (args.some((a) => a === '--help' || a === '-h')) process.stdout.write(USAGE);
  else if (args.includes('--version')) process.stdout.write(`topology-extender ${VERSION}\n`);
  else await serve(args);
} else {
  process.stderr.write(`topology-extender: unknown command "${command}"\n\n${USAGE}`);
  process.exit(1);
}
