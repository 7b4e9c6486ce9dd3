// Loads the credentials for a live cluster the way kubectl finds them: an explicit file, the in-cluster service account,
// or (neither given) $KUBECONFIG's files merged in order, then ~/.kube/config, then the service account when the pod
// runs in a cluster. Unlike client-node's loadFromDefault it never falls back to http://localhost:8080 silently.
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LoadKubeConfigOptions {
  /** Path of a kubeconfig file (`--kubeconfig`). */
  kubeconfig?: string;
  /** Use the pod's service account (`--in-cluster`). */
  inCluster?: boolean;
  /** Environment to read KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT from (tests). Defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Home directory for ~/.kube/config (tests). Defaults to os.homedir(). */
  home?: string;
}

export class KubeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeConfigError';
  }
}

function loadFile(kc: KubeConfig, file: string): void {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new KubeConfigError(`cannot read kubeconfig ${file}: ${(err as Error).message}`);
  }
  const one = new KubeConfig();
  try {
    one.loadFromString(text);
  } catch (err) {
    // The YAML parser's message goes on with a snippet of the file: its first line says what is wrong and where.
    throw new KubeConfigError(`invalid kubeconfig ${file}: ${(err as Error).message.split('\n')[0]}`);
  }
  // Relative certificate/key paths are relative to the file, as kubectl resolves them.
  one.makePathsAbsolute(dirname(file));
  // kubectl's merge: the first file that sets a value wins (current-context and every named entry).
  if (!kc.currentContext && one.currentContext) kc.currentContext = one.currentContext;
  const has = <T extends { name: string }>(list: T[] | undefined, name: string) => !!list?.some((e) => e.name === name);
  kc.clusters ??= [];
  kc.users ??= [];
  kc.contexts ??= [];
  for (const c of one.clusters ?? []) if (!has(kc.clusters, c.name)) kc.clusters.push(c);
  for (const u of one.users ?? []) if (!has(kc.users, u.name)) kc.users.push(u);
  for (const c of one.contexts ?? []) if (!has(kc.contexts, c.name)) kc.contexts.push(c);
}

function loadInCluster(kc: KubeConfig, env: NodeJS.ProcessEnv): void {
  if (!env.KUBERNETES_SERVICE_HOST || !env.KUBERNETES_SERVICE_PORT) {
    throw new KubeConfigError(
      'in-cluster configuration needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (not running in a pod?)',
    );
  }
  const token = `${SERVICE_ACCOUNT_DIR}/token`;
  try {
    accessSync(token, constants.R_OK);
  } catch (err) {
    throw new KubeConfigError(`cannot read service account token ${token}: ${(err as Error).message}`);
  }
  kc.loadFromCluster();
}

function check(kc: KubeConfig, origin: string): KubeConfig {
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new KubeConfigError(`kubeconfig ${origin}: no current cluster (current-context "${kc.getCurrentContext()}")`);
  }
  if (!cluster.server) throw new KubeConfigError(`kubeconfig ${origin}: cluster "${cluster.name}" has no server`);
  return kc;
}

/** Loads a KubeConfig; every failure is a KubeConfigError that names the file or the missing setting. */
export function loadKubeConfig(opts: LoadKubeConfigOptions = {}): KubeConfig {
  const env = opts.env ?? process.env;
  const kc = new KubeConfig();
  if (opts.kubeconfig && opts.inCluster) {
    throw new KubeConfigError('choose either a kubeconfig file or in-cluster configuration, not both');
  }
  if (opts.kubeconfig) {
    loadFile(kc, opts.kubeconfig);
    return check(kc, opts.kubeconfig);
  }
  if (opts.inCluster) {
    loadInCluster(kc, env);
    return check(kc, 'in-cluster');
  }
  const fromEnv = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f.length > 0);
  if (fromEnv.length > 0) {
    // kubectl skips files of the list that do not exist, and fails when none does.
    const present = fromEnv.filter((f) => existsSync(f));
    if (present.length === 0) {
      throw new KubeConfigError(`cannot read kubeconfig: none of the KUBECONFIG files exists (${fromEnv.join(', ')})`);
    }
    for (const file of present) loadFile(kc, file);
    return check(kc, present.join(delimiter));
  }
  const home = opts.home ?? homedir();
  const defaultFile = join(home, '.kube', 'config');
  if (existsSync(defaultFile)) {
    loadFile(kc, defaultFile);
    return check(kc, defaultFile);
  }
  if (env.KUBERNETES_SERVICE_HOST) {
    loadInCluster(kc, env);
    return check(kc, 'in-cluster');
  }
  throw new KubeConfigError(
    `no kubeconfig found: KUBECONFIG is unset, ${defaultFile} does not exist and not running in a cluster; ` +
      'pass --kubeconfig FILE or --in-cluster',
  );
}
