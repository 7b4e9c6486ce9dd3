// What validating a request at the edge costs on the largest body kube-scheduler sends: a non-cache filter with 500
// full nodes (each with 40 images and 5 conditions, as kubelets report them). Prints the cost of Ajv's check of the
// ExtenderArgs schema plus the nesting check, as a share of JSON.parse of the same body and of the whole
// app.inject round trip, all measured in this run. Standalone (not in `npm run bench`):
// Run: ./node_modules/.bin/node bench/validation-cost.ts [--rounds 200]
import { parseArgs } from 'node:util';
import { Ajv } from 'ajv';
import type { Node } from '../src/cluster/types.ts';
import * as wire from '../src/extender/wire.ts';
import { createTestExtender } from '../test/helpers/extender.ts';
import { generateCluster } from './synthetic.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '200' } } });
const rounds = Number(values.rounds);
const cluster = generateCluster({ nodes: 500, podsPerNode: 1, pvsPerNode: 1, seed: 1 });
const nodes = (cluster.objects.filter((o) => o.kind === 'Node') as Node[]).map((n, i) => ({
  ...n,
  status: {
    ...n.status,
    images: Array.from({ length: 40 }, (_, k) => ({
      names: [`registry.example.com/team-${k}/app@sha256:${String(i * 40 + k).padStart(64, '0')}`, `app-${k}:v1`],
      sizeBytes: 100_000_000 + k,
    })),
    conditions: ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure', 'NetworkUnavailable'].map((type) => ({
      type,
      status: type === 'Ready' ? 'True' : 'False',
      lastHeartbeatTime: '2026-01-01T00:00:00Z',
      lastTransitionTime: '2026-01-01T00:00:00Z',
      reason: 'KubeletReady',
      message: 'kubelet is posting ready status',
    })),
  },
}));
const pod = cluster.pending.noClaims[0];
const body = JSON.stringify({ Pod: pod, Nodes: { items: nodes }, NodeNames: null });

// Fastify's Ajv options in src/http/app.ts.
const ajv = new Ajv({ coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false });
const validate = ajv.compile(wire.ExtenderArgs);

function timed(what: () => void): number {
  for (let i = 0; i < 10; i++) what();
  const start = performance.now();
  for (let i = 0; i < rounds; i++) what();
  return (performance.now() - start) / rounds;
}

const parsed = JSON.parse(body);
if (!validate(parsed)) throw new Error(`the bench body is invalid: ${ajv.errorsText(validate.errors)}`);
const parse = timed(() => JSON.parse(body));
const depth = timed(() => wire.tooDeeplyNested(parsed));
const schema = timed(() => validate(parsed));

const t = await createTestExtender(cluster.objects);
const extender = t.extender;
const inject = async () =>
  extender.app.inject({
    method: 'POST',
    url: '/scheduler/filter',
    headers: { 'content-type': 'application/json' },
    payload: body,
  });
const first = await inject();
if (first.statusCode !== 200) throw new Error(`filter answered ${first.statusCode}: ${first.body.slice(0, 500)}`);
for (let i = 0; i < 10; i++) await inject();
const start = performance.now();
for (let i = 0; i < rounds; i++) await inject();
const whole = (performance.now() - start) / rounds;
await t.close();

const mib = (Buffer.byteLength(body) / 2 ** 20).toFixed(1);
console.log(`500-node non-cache filter body: ${mib} MiB, ${rounds} rounds`);
console.log(`JSON.parse            ${parse.toFixed(2)} ms`);
const check = depth + schema;
console.log(`nesting check         ${depth.toFixed(2)} ms`);
console.log(`schema check (Ajv)    ${schema.toFixed(2)} ms`);
console.log(`both                  ${check.toFixed(2)} ms  = ${(check / parse).toFixed(2)} × JSON.parse`);
console.log(`whole app.inject      ${whole.toFixed(2)} ms  (validation is ${((100 * check) / whole).toFixed(1)} %)`);
