// Every setting in one TypeBox schema: its type, default, help text and allowed values. Flags, environment variables
// and the YAML config file are read from it. Precedence: defaults < --config file < TOPOLOGY_EXTENDER_* env < flags.
// Adding a setting is one entry in SETTINGS below.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type Static, type TSchema, Type } from 'typebox';
import { Value } from 'typebox/value';
import { parse as parseYaml } from 'yaml';
import { parseValue } from './cluster/quantity.ts';
import { DEFAULT_MAX_QUEUED_WORK_SECONDS } from './http/admission.ts';
import { LOG_FORMATS } from './log.ts';
import { canonicalPluginName, PLUGIN_NAMES } from './plugins/names.ts';
import { shapeSchema } from './volumes/scorer.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const file = (description: string) => Type.Optional(Type.String({ minLength: 1, description }));
const seconds = (o: { default: number; description: string }) => Type.Number({ exclusiveMinimum: 0, ...o });

/**
 * Schema options read here: `fromText` parses the text form (flags, environment), `normalize` maps an accepted alias
 * to its canonical value (an array's items are normalized one by one), `allowed` words the error.
 */
interface TextOptions {
  fromText?: (text: string) => unknown;
  normalize?: (value: unknown) => unknown;
  toText?: (value: never) => string;
  allowed?: string;
}

const SETTINGS = Type.Object({
  host: Type.String({ minLength: 1, default: '127.0.0.1', description: 'address to listen on' }),
  port: Type.Integer({
    minimum: 0,
    maximum: 65535,
    default: 8888,
    description: 'port to listen on (0 picks a free port)',
  }),
  healthPort: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      description:
        'also serve /healthz, /readyz and /metrics, plain HTTP and without a client certificate, on this port of --health-host: probes and Prometheus reach them while the verbs stay on --host (unset: only on --port)',
    }),
  ),
  healthHost: Type.String({
    minLength: 1,
    default: '0.0.0.0',
    description: 'address of the --health-port listener (a pod IP, or every address)',
  }),
  clusterState: file('serve from this cluster-state file (YAML/JSON as kubectl prints it) instead of an API server'),
  kubeconfig: file('kubeconfig of the cluster to watch'),
  inCluster: Type.Boolean({ default: false, description: "use the pod's service account (in-cluster config)" }),
  simulateVolumeController: Type.Boolean({
    default: true,
    description:
      'with --cluster-state: run the simulated PV controller and provisioner; --no-simulate-volume-controller serves the file exactly as written (pre-bound and selected-node claims stay as they are)',
  }),
  logLevel: Type.Enum(LOG_LEVELS, {
    default: 'info',
    description: 'log level; debug and trace also print the stack of an error',
  }),
  logFormat: Type.Optional(
    Type.Enum(LOG_FORMATS, {
      description:
        'text: one readable line per event; json: one JSON object per line (default: text when stdout is a terminal, json otherwise and in a pod)',
    }),
  ),
  bodyLimit: Type.Integer({
    minimum: 1024,
    default: 32 * 2 ** 20,
    description: 'largest request body accepted; non-cache mode with 5,000 full nodes needs about 30Mi',
    fromText: parseValue,
    allowed: 'a byte size of at least 1Ki, as a number or a quantity such as 32Mi',
  }),
  memoryBudget: Type.Optional(
    Type.Integer({
      minimum: 64 * 2 ** 20,
      description:
        "memory the process should stay within; the admission limits below default from it (default: the cgroup's limit, i.e. the pod's resources.limits.memory, else V8's heap limit)",
      fromText: parseValue,
      allowed: 'a byte size of at least 64Mi, as a number or a quantity such as 1Gi',
    }),
  ),
  maxConnections: Type.Optional(
    Type.Integer({
      minimum: 1,
      description:
        'open connections; requests on connections past it are answered 503 with Retry-After (default: one per MiB of memoryBudget, at least 16)',
    }),
  ),
  maxBodyBytesHeld: Type.Optional(
    Type.Integer({
      minimum: 1024,
      description:
        'bytes of request bodies admitted and not yet answered; a request past it is answered 503 with Retry-After before its body is read (default: memoryBudget / 32)',
      fromText: parseValue,
      allowed: 'a byte size of at least 1Ki, as a number or a quantity such as 32Mi',
    }),
  ),
  maxQueuedVerbs: Type.Optional(
    Type.Integer({
      minimum: 1,
      description:
        'verb requests admitted and not yet started; past it a verb is answered 503 with Retry-After at once (default: one per 4 MiB of memoryBudget, at least 16)',
    }),
  ),
  maxQueuedWorkSeconds: seconds({
    default: DEFAULT_MAX_QUEUED_WORK_SECONDS,
    description:
      "expected computing time of the verbs admitted and not yet started, each counted at its verb's recent mean; past it, once the oldest of them has waited as long, a verb is answered 503 with Retry-After at once (a burst is admitted whole, up to maxQueuedVerbs; a sustained overload keeps about this much work waiting)",
  }),
  bindTimeoutSeconds: Type.Integer({
    minimum: 1,
    maximum: 86400,
    default: 600,
    description:
      "how long bind waits for delegated claims to be bound (the extender's httpTimeout must be at least this)",
  }),
  verbDeadlineSeconds: seconds({
    default: 5,
    description:
      "a verb not started this long after it arrived is answered 503 uncomputed (kube-scheduler's httpTimeout, 5 s by default)",
  }),
  assumedPodTtlSeconds: seconds({
    default: 30,
    description:
      'after our bind finished, how long an assumed pod may stay unconfirmed before it is reconciled with the API',
  }),
  // kube-apiserver v1.37 sends the first bookmark on a quiet watch ~120 s after it opened: a shorter threshold restarts
  // quiet watches for nothing (harmless, they resume where they were).
  watchStaleSeconds: seconds({
    default: 180,
    description:
      'a watch silent this long is restarted from where it was; silence alone never makes the extender unready, a restart that fails does',
  }),
  listPageSize: Type.Integer({
    minimum: 1,
    maximum: 100000,
    default: 500,
    description: 'page size (limit) of list requests',
  }),
  shutdownGraceSeconds: seconds({ default: 10, description: 'on SIGTERM, how long in-flight requests may finish' }),
  disabledPlugins: Type.Array(Type.Enum(PLUGIN_NAMES, { normalize: canonicalPluginName }), {
    default: [],
    description: `plugins to turn off, by kube-scheduler's names: ${PLUGIN_NAMES.join(', ')} (kebab-case accepted)`,
  }),
  // On by default (issue 46): its work yields to the verbs (never while one is queued or just answered, 0.25 ms pieces,
  // sweeps only for a reader while verbs come); what it still costs them, measured report on against off in an
  // interleaved A/B, is in bench/RESULTS.md (pending-report-default-issue-46).
  pendingReport: Type.Boolean({
    default: true,
    description:
      'keep the pending report (GET /api/v1/pending, topology_extender_pending_* metrics) current in the background, between verbs (--no-pending-report: that route answers 503 and those series stay empty; while pods keep being bound its slices take up to a tenth of a core, and at 5,000 nodes the answer to a verb may take a few tenths of a millisecond longer (bench/RESULTS.md))',
  }),
  // Off by default: the line of a kube-scheduler that runs its own volume plugins (the filter-only registration) is
  // upstream's alone, which explain writes; the chart turns it on with delegateVolumeBinding.
  delegatedVolumeBinding: Type.Boolean({
    default: false,
    description:
      "kube-scheduler is registered with full delegation (its volume plugins off, bindVerb set; the chart's delegateVolumeBinding): explain's summary and the pending report's line are then the PodScheduled message that kube-scheduler writes, which counts this extender's verdicts per node after its own filters",
  }),
  // On in every registration: a fully delegated kube-scheduler samples nodes blind to volumes, and with joint
  // capacity accounting our filter may refuse a filter-only kube-scheduler's whole sample too.
  nominateNodes: Type.Boolean({
    default: true,
    description:
      "after a filter that passed none of the nodes kube-scheduler asked about (its sample: percentageOfNodesToScore), set the pod's status.nominatedNodeName to the node where it fits, which kube-scheduler tries first in the pod's next attempt (needs patch on pods/status; src/extender/nominate.ts)",
  }),
  kubeVersion: Type.Optional(
    Type.String({
      pattern: '^v?\\d+\\.\\d+(\\.\\d+)?$',
      normalize: (v: unknown) => (typeof v === 'string' && !v.startsWith('v') ? `v${v}` : v),
      allowed: 'a version such as v1.36 or v1.36.3',
      description:
        "the cluster's Kubernetes version, whose kube-scheduler's wording explain and the pending report follow (default: the API server's /version; with --cluster-state, which has none, the newest supported)",
    }),
  ),
  schedulerNames: Type.Array(Type.String({ minLength: 1 }), {
    minItems: 1,
    default: ['default-scheduler'],
    description:
      'the spec.schedulerName of the pods the kube-scheduler calling this extender schedules: the pending report (GET /api/v1/pending) covers their unbound pods, and their new pods whose claims are bound to PVs few nodes allow are nominated before the nodes kube-scheduler samples can miss those nodes',
    allowed: 'a comma-separated list of scheduler names',
  }),
  storageScoringShape: shapeSchema({
    default: [
      { utilization: 0, score: 10 },
      { utilization: 100, score: 0 },
    ],
    description: 'storage capacity scoring shape; 0:10,100:0 prefers free space, 0:0,100:10 the tightest fit',
    allowed: 'points "utilization:score" with utilization 0..100 strictly ascending and score 0..10, e.g. 0:10,100:0',
  }),
  capacityAccounting: Type.Enum(['joint', 'upstream'], {
    default: 'joint',
    description:
      "joint: a pod's claims on one CSIStorageCapacity must fit it together, after provisions it does not show yet; " +
      "upstream: kube-scheduler's per-claim check (see README, Capacity that never over-commits)",
  }),
  tlsCertFile: file(
    'serve HTTPS (HTTP/2 and HTTP/1.1) with this PEM certificate chain; reloaded when the file changes',
  ),
  tlsKeyFile: file('PEM private key of --tls-cert-file'),
  clientCaFile: file('PEM CA bundle: the scheduler verbs and the ops API then require a client certificate it signed'),
});

export type Settings = Static<typeof SETTINGS>;
type Key = keyof Settings;
type SettingSchema = TSchema &
  TextOptions & {
    default?: unknown;
    description?: string;
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
    type?: string;
    items?: SettingSchema;
    enum?: string[];
  };
const schemaOf = (key: Key) => SETTINGS.properties[key] as unknown as SettingSchema;

export const SETTING_NAMES = Object.keys(SETTINGS.properties) as Key[];

export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

/** The value a flag or environment variable spells as text; anything that does not parse is left for the check. */
function fromText(schema: SettingSchema, text: string): unknown {
  if (schema.fromText) {
    try {
      return schema.fromText(text);
    } catch {
      return text;
    }
  }
  if (schema.items) {
    const items = text.split(',').map((s) => s.trim());
    return items.filter((s) => s !== '').map((s) => fromText(schema.items as SettingSchema, s));
  }
  if (schema.type === 'boolean')
    return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : text;
  if (schema.type === 'number' || schema.type === 'integer')
    return /^\s*\d+(\.\d*)?\s*$/.test(text) ? Number(text) : text;
  return text;
}

function normalize(schema: SettingSchema, value: unknown): unknown {
  if (schema.items && Array.isArray(value)) return value.map((v) => normalize(schema.items as SettingSchema, v));
  return schema.normalize ? schema.normalize(value) : value;
}

/** What a setting allows, in words, from its schema. */
function allowed(schema: SettingSchema): string {
  if (schema.allowed) return schema.allowed;
  if (schema.type === 'integer') return `an integer from ${schema.minimum} to ${schema.maximum ?? 'any'}`;
  if (schema.type === 'number') return `a number greater than ${schema.exclusiveMinimum}`;
  if (schema.type === 'boolean') return 'true or false';
  if (schema.type === 'string') return 'a non-empty string';
  if (schema.enum) return schema.enum.join(', ');
  if (schema.items) return `a list of ${allowed(schema.items)}`;
  return JSON.stringify(schema);
}

/** A value in the form flags take, for --help and docs/configuration.md. */
function toText(schema: SettingSchema, value: unknown): string {
  if (value === undefined) return '';
  if (Array.isArray(value)) return value.map((v) => toText(schema.items as SettingSchema, v)).join(',');
  return schema.toText ? schema.toText(value as never) : String(value);
}

export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

export function envName(key: string): string {
  return `TOPOLOGY_EXTENDER_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

export function defaultSettings(): Settings {
  return structuredClone(Object.fromEntries(SETTING_NAMES.map((k) => [k, schemaOf(k).default]))) as Settings;
}

/** Validates partial raw settings (from YAML, env or flags) on top of a base. `origin` names where they came from. */
export function applySettings(base: Settings, raw: Record<string, unknown>, origin: (key: string) => string): Settings {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    if (!SETTING_NAMES.includes(key as Key)) {
      throw new SettingsError(`unknown setting ${origin(key)}: known settings are ${SETTING_NAMES.join(', ')}`);
    }
    const schema = schemaOf(key as Key);
    if (Type.IsOptional(schema) && (value === null || value === '')) {
      out[key] = undefined;
      continue;
    }
    const parsed = normalize(schema, typeof value === 'string' ? fromText(schema, value) : value);
    if (!Value.Check(schema, parsed)) {
      throw new SettingsError(
        `invalid setting ${origin(key)}=${JSON.stringify(value)}: allowed values are ${allowed(schema)}`,
      );
    }
    out[key] = parsed;
  }
  return out as Settings;
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
    ...SETTING_NAMES.map((k) => [flagName(k), { type: schemaOf(k).type === 'boolean' ? 'boolean' : 'string' }]),
  ]);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    // --no-<flag> turns a boolean off (simulateVolumeController defaults to true).
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false, allowNegative: true });
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

/** One row per setting, for --help and docs/configuration.md's table. */
export function settingsReference(): { key: string; flag: string; env: string; default: string; help: string }[] {
  return SETTING_NAMES.map((k) => {
    const schema = schemaOf(k);
    const shown = toText(schema, schema.default);
    return { key: k, flag: `--${flagName(k)}`, env: envName(k), default: shown, help: schema.description ?? '' };
  });
}

export function settingsHelp(): string {
  const rows = settingsReference().map(
    (r) => `  ${r.flag}  ${r.env}\n      ${r.help}${r.default === '' ? '' : ` (default ${r.default})`}`,
  );
  return ['  --config FILE  YAML file with any of the settings below (camelCase keys)', ...rows].join('\n');
}

/** docs/configuration.md's table of settings (`npm run readme` writes it, a test checks it). */
export function settingsTable(): string {
  const rows = settingsReference().map(
    (r) =>
      `| \`${r.key}\` | \`${r.flag}\` | \`${r.env}\` | ${r.default === '' ? '—' : `\`${r.default}\``} | ${r.help} |`,
  );
  return ['| YAML key | flag | environment | default | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}
