// What one API call costs the extender's client (src/cluster/kube/client.ts) in CPU, against a real kube-apiserver
// (test/components/control-plane.ts): sequential GETs of a small object and merge PATCHes of it, then the same at
// 8 and 64 in flight (a burst of binds), against floors measured in the same run: undici's own `request` with the
// headers built once (what no client that authenticates each call can beat), over one HTTP/2 connection (as ours) and
// over HTTP/1.1 on at most HTTP1_CONNECTIONS kept connections (tried for ours: bench/RESULTS.md `api-client-http1`).
// Issue 32 found a third of a delegated burst's CPU in the API client and its sockets; this isolates the client.
// Run: ./node_modules/.bin/node bench/api-client.ts [--requests 2000] [--rounds 2]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import { KubeClient } from '../src/cluster/kube/client.ts';
import { kubeComponents } from '../test/components/components.ts';
import { startControlPlane } from '../test/components/control-plane.ts';

const { values } = parseArgs({
  options: { requests: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '2' } },
});
const REQUESTS = Number(values.requests);
const HTTP1_CONNECTIONS = 16;
const ROUNDS = Number(values.rounds);

const { components, skip } = await kubeComponents();
if (!components) throw new Error(skip);
const plane = await startControlPlane(components, { auditAdmin: false });
try {
  const kc = new KubeConfig();
  kc.loadFromString(await readFile(plane.adminKubeconfig, 'utf8'));
  const client = new KubeClient(kc);
  const path = '/api/v1/namespaces/default/configmaps/bench';
  await client.request('POST', '/api/v1/namespaces/default/configmaps', {
    body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bench' }, data: { n: '0' } },
  });

  // The floors: the headers computed once, one pool per protocol.
  const probe = new RequestContext(plane.url, HttpMethod.GET);
  await kc.applySecurityAuthentication(probe);
  const auth = probe.getHeaders();
  const http1Pool = new Agent({
    connect: { ca: plane.ca, keepAlive: true },
    allowH2: false,
    connections: HTTP1_CONNECTIONS,
  });
  const http2Pool = new Agent({ connect: { ca: plane.ca, keepAlive: true } });
  const floorOn = (dispatcher: Agent) => async (method: 'GET' | 'PATCH', n: number) => {
    const answer = await request(plane.url + path, {
      method,
      dispatcher,
      headers: {
        ...auth,
        accept: 'application/json',
        ...(method === 'PATCH' ? { 'content-type': 'application/merge-patch+json' } : {}),
      },
      body: method === 'PATCH' ? JSON.stringify({ data: { n: String(n) } }) : undefined,
    });
    JSON.parse(await answer.body.text());
    if (answer.statusCode !== 200) throw new Error(`floor ${method}: ${answer.statusCode}`);
  };
  const floor1 = floorOn(http1Pool);
  const floor2 = floorOn(http2Pool);
  const ours = async (method: 'GET' | 'PATCH', n: number) => {
    await client.request(method, path, {
      ...(method === 'PATCH' ? { body: { data: { n: String(n) } }, contentType: 'application/merge-patch+json' } : {}),
    });
  };

  /** CPU (user + system) and wall per request of `count` calls, `inFlight` at a time. */
  const measure = async (call: typeof ours, method: 'GET' | 'PATCH', inFlight: number) => {
    let next = 0;
    const cpu = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < REQUESTS) await call(method, next++);
      }),
    );
    const wallMs = performance.now() - started;
    const used = process.cpuUsage(cpu);
    return { cpuUs: (used.user + used.system) / REQUESTS, wallUs: (wallMs * 1000) / REQUESTS };
  };

  const rows: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const method of ['GET', 'PATCH'] as const) {
      for (const inFlight of [1, 8, 64]) {
        // Warm each before measuring any.
        for (const call of [ours, floor2, floor1]) await measure(call, method, inFlight);
        const f2 = await measure(floor2, method, inFlight);
        const f1 = await measure(floor1, method, inFlight);
        const o = await measure(ours, method, inFlight);
        const row =
          `| ${round} | ${method} | ${inFlight} | ${o.cpuUs.toFixed(0)} µs | ${f2.cpuUs.toFixed(0)} µs | ` +
          `${(o.cpuUs / f2.cpuUs).toFixed(2)}× | ${f1.cpuUs.toFixed(0)} µs | ${o.wallUs.toFixed(0)} µs | ` +
          `${f2.wallUs.toFixed(0)} µs | ${f1.wallUs.toFixed(0)} µs |`;
        console.error(row);
        rows.push(row);
      }
    }
  }
  const load = (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(', ');
  console.log(
    [
      `${REQUESTS} requests per row against kube-apiserver on loopback (TLS, token); load average at the end ${load}.`,
      'CPU is this process only (the client), per request; the floors are undici `request` with fixed headers, over',
      `one HTTP/2 connection (as ours) and over HTTP/1.1 on at most ${HTTP1_CONNECTIONS} connections.`,
      '',
      '| round | verb | in flight | client CPU | floor CPU, HTTP/2 | ratio | floor CPU, HTTP/1.1 | client wall | floor wall, HTTP/2 | floor wall, HTTP/1.1 |',
      '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...rows,
    ].join('\n'),
  );
  await Promise.all([http1Pool.close(), http2Pool.close()]);
} finally {
  await plane.stop();
}
