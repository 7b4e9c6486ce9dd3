// Every setting in one table: its default, how to read it from a flag, an environment variable or the YAML config
// file, and what values it allows. Precedence: defaults < --config file < TOPOLOGY_EXTENDER_* env < flags.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { parseValue } from './cluster/quantity.ts';

export const PLUGIN_NAMES = ['volume-restrictions', 'node-volume-limits', 'volume-binding', 'volume-zone'] as const;
export type PluginName = (typeof PLUGIN_NAMES)[number];
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export interface ShapePoint {
  utilization: number;
  score: number;
}

export interface Settings {
  host: string;
  port: number;
  clusterState: string | undefined;
  kubeconfig: string | undefined;
  inCluster: boolean;
  logLevel: (typeof LOG_LEVELS)[number];
  bodyLimit: number;
  bindTimeoutSeconds: number;
  assumedPodTtlSeconds: number;
  watchStaleSeconds: number;
  listPageSize: number;
  shutdownGraceSeconds: number;
  disabledPlugins: PluginName[];
  storageScoringShape: ShapePoint[];
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  clientCaFile: string | undefined;
}

export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

type Parser<T> = (raw: unknown, name: string) => T;

function fail(name: string, raw: unknown, allowed: string): never {
  throw new SettingsError(`invalid setting ${name}=${JSON.stringify(raw)}: allowed values are ${allowed}`);
}

function integer(min: number, max: number): Parser<number> {
  return (raw, name) => {
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d+$/.test(raw.trim()) ? Number(raw) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) fail(name, raw, `an integer from ${min} to ${max}`);
    return n;
  };
}

function positiveNumber(raw: unknown, name: string): number {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
  if (!Number.isFinite(n) || n <= 0) fail(name, raw, 'a number greater than 0');
  return n;
}

function text(raw: unknown, name: string): string {
  if (typeof raw !== 'string' || raw === '') fail(name, raw, 'a non-empty string');
  return raw;
}

function optionalPath(raw: unknown, name: string): string | undefined {
  return raw === undefined || raw === null || raw === '' ? undefined : text(raw, name);
}

function boolean(raw: unknown, name: string): boolean {
  if (typeof raw === 'boolean') return raw;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  return fail(name, raw, 'true or false');
}

function oneOf<T extends string>(values: readonly T[]): Parser<T> {
  return (raw, name) =>
    (values as readonly unknown[]).includes(raw) ? (raw as T) : fail(name, raw, values.join(', '));
}

function byteSize(raw: unknown, name: string): number {
  try {
    const n = typeof raw === 'number' ? raw : parseValue(String(raw));
    if (Number.isInteger(n) && n >= 1024) return n;
  } catch {}
  return fail(name, raw, 'a byte size of at least 1Ki, as a number or a quantity such as 32Mi');
}

function pluginList(raw: unknown, name: string): PluginName[] {
  const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',').map((s) => s.trim()) : null;
  if (!items) return fail(name, raw, `a list of ${PLUGIN_NAMES.join(', ')}`);
  return items.filter((s) => s !== '').map((s) => oneOf(PLUGIN_NAMES)(s, name));
}

/** "0:10,100:0" or [{utilization: 0, score: 10}, ...]: utilization 0..100 ascending, scores 0..10 (upstream's shape). */
function shape(raw: unknown, name: string): ShapePoint[] {
  const allowed =
    'points "utilization:score" with utilization 0..100 strictly ascending and score 0..10, e.g. 0:10,100:0';
  const points: unknown[] = Array.isArray(raw)
    ? raw
    : typeof raw === 'string'
      ? raw.split(',').map((p) => {
          const [u, s] = p.split(':');
          return { utilization: Number(u), score: Number(s) };
        })
      : fail(name, raw, allowed);
  const out = points.map((p) => {
    const { utilization, score } = (p ?? {}) as Partial<ShapePoint>;
    if (!Number.isInteger(utilization) || !Number.isInteger(score)) fail(name, raw, allowed);
    if (utilization! < 0 || utilization! > 100 || score! < 0 || score! > 10) fail(name, raw, allowed);
    return { utilization: utilization!, score: score! };
  });
  if (out.length === 0 || out.some((p, i) => i > 0 && p.utilization <= out[i - 1].utilization))
    fail(name, raw, allowed);
  return out;
}

interface Definition<T> {
  default: T;
  parse: Parser<T>;
  help: string;
}

const DEFINITIONS: { [K in keyof Settings]: Definition<Settings[K]> } = {
  host: { default: '127.0.0.1', parse: text, help: 'address to listen on' },
  port: { default: 8888, parse: integer(0, 65535), help: 'port to listen on (0 picks a free port)' },
  clusterState: {
    default: undefined,
    parse: optionalPath,
    help: 'serve from this snapshot file (YAML/JSON as kubectl prints it) instead of an API server',
  },
  kubeconfig: { default: undefined, parse: optionalPath, help: 'kubeconfig of the cluster to watch' },
  inCluster: { default: false, parse: boolean, help: "use the pod's service account (in-cluster config)" },
  logLevel: { default: 'info', parse: oneOf(LOG_LEVELS), help: 'log level' },
  bodyLimit: {
    default: 32 * 2 ** 20,
    parse: byteSize,
    help: 'largest request body accepted; non-cache mode with 5,000 full nodes needs about 30Mi',
  },
  bindTimeoutSeconds: {
    default: 600,
    parse: integer(1, 86400),
    help: "how long bind waits for delegated claims to be bound (the extender's httpTimeout must be at least this)",
  },
  assumedPodTtlSeconds: {
    default: 30,
    parse: positiveNumber,
    help: 'after our bind finished, how long an assumed pod may stay unconfirmed before it is reconciled with the API',
  },
  watchStaleSeconds: {
    // API servers send a bookmark on a quiet watch about once a minute: 60 s would flap a quiet kind's readiness.
    default: 120,
    parse: positiveNumber,
    help: 'a watch silent this long is restarted and the extender reports not ready until it recovers',
  },
  listPageSize: { default: 500, parse: integer(1, 100000), help: 'page size (limit) of list requests' },
  shutdownGraceSeconds: {
    default: 10,
    parse: positiveNumber,
    help: 'on SIGTERM, how long in-flight requests may finish',
  },
  disabledPlugins: { default: [], parse: pluginList, help: `plugins to turn off: ${PLUGIN_NAMES.join(', ')}` },
  storageScoringShape: {
    default: [
      { utilization: 0, score: 10 },
      { utilization: 100, score: 0 },
    ],
    parse: shape,
    help: 'storage capacity scoring shape; 0:10,100:0 prefers free space, 0:0,100:10 the tightest fit',
  },
  tlsCertFile: {
    default: undefined,
    parse: optionalPath,
    help: 'serve HTTPS (HTTP/2 and HTTP/1.1) with this PEM certificate chain; reloaded when the file changes',
  },
  tlsKeyFile: { default: undefined, parse: optionalPath, help: 'PEM private key of --tls-cert-file' },
  clientCaFile: {
    default: undefined,
    parse: optionalPath,
    help: 'PEM CA bundle: the scheduler verbs and the ops API then require a client certificate it signed',
  },
};

export const SETTING_NAMES = Object.keys(DEFINITIONS) as (keyof Settings)[];

export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

export function envName(key: string): string {
  return `TOPOLOGY_EXTENDER_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

export function defaultSettings(): Settings {
  return structuredClone(
    Object.fromEntries(SETTING_NAMES.map((k) => [k, DEFINITIONS[k].default])),
  ) as unknown as Settings;
}

/** Validates partial raw settings (from YAML, env or flags) on top of a base. `origin` names where they came from. */
export function applySettings(base: Settings, raw: Record<string, unknown>, origin: (key: string) => string): Settings {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    const def = DEFINITIONS[key as keyof Settings] as Definition<unknown> | undefined;
    if (!def) throw new SettingsError(`unknown setting ${origin(key)}: known settings are ${SETTING_NAMES.join(', ')}`);
    out[key] = def.parse(value, origin(key));
  }
  return out as unknown as Settings;
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SettingsError(`cannot read --config ${file}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new SettingsError(`--config ${file} is not valid YAML: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new SettingsError(`--config ${file} must be a YAML mapping`);
  return doc as Record<string, unknown>;
}

/** Settings for `serve` from argv (without the command) and the environment. */
export function loadSettings(argv: string[], env: NodeJS.ProcessEnv = process.env): Settings {
  const options = Object.fromEntries([
    ['config', { type: 'string' as const }],
    ...SETTING_NAMES.map((k) => [
      flagName(k),
      { type: typeof DEFINITIONS[k].default === 'boolean' ? 'boolean' : 'string' },
    ]),
  ]);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  } catch (err) {
    throw new SettingsError(`${(err as Error).message}; run with --help for the settings`);
  }
  const flags = parsed.values as Record<string, string | boolean | undefined>;
  let settings = defaultSettings();
  if (typeof flags.config === 'string') {
    settings = applySettings(settings, readConfigFile(flags.config), (k) => `${k} (in ${flags.config})`);
  }
  const fromEnv = Object.fromEntries(SETTING_NAMES.map((k) => [k, env[envName(k)]]));
  settings = applySettings(settings, fromEnv, envName);
  const fromFlags = Object.fromEntries(SETTING_NAMES.map((k) => [k, flags[flagName(k)]]));
  settings = applySettings(settings, fromFlags, (k) => `--${flagName(k)}`);
  if (settings.clusterState && (settings.kubeconfig || settings.inCluster)) {
    throw new SettingsError('invalid settings: --cluster-state cannot be combined with --kubeconfig or --in-cluster');
  }
  if (!settings.tlsCertFile !== !settings.tlsKeyFile) {
    throw new SettingsError('invalid settings: --tls-cert-file and --tls-key-file go together');
  }
  if (settings.clientCaFile && !settings.tlsCertFile) {
    throw new SettingsError('invalid settings: --client-ca-file needs --tls-cert-file and --tls-key-file');
  }
  if (settings.kubeconfig && settings.inCluster) {
    throw new SettingsError('invalid settings: choose one of --kubeconfig and --in-cluster');
  }
  return settings;
}

/** One row per setting, for --help and the README's table. */
export function settingsReference(): { key: string; flag: string; env: string; default: string; help: string }[] {
  return SETTING_NAMES.map((k) => {
    const def = DEFINITIONS[k];
    const shown =
      k === 'storageScoringShape'
        ? (def.default as ShapePoint[]).map((p) => `${p.utilization}:${p.score}`).join(',')
        : def.default === undefined
          ? ''
          : Array.isArray(def.default)
            ? def.default.join(',')
            : String(def.default);
    return { key: k, flag: `--${flagName(k)}`, env: envName(k), default: shown, help: def.help };
  });
}

export function settingsHelp(): string {
  const rows = settingsReference().map(
    (r) => `  ${r.flag}  ${r.env}\n      ${r.help}${r.default === '' ? '' : ` (default ${r.default})`}`,
  );
  return ['  --config FILE  YAML file with any of the settings below (camelCase keys)', ...rows].join('\n');
}
