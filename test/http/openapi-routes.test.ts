// Every status a route answers is documented on that route: each route of the served OpenAPI document is sent its
// named examples (each must get 200, as "Try it out" sends them against `npm start`'s example cluster), bad JSON, a
// wrong Content-Type, a body over --body-limit, unknown names, (with --client-ca-file) no client certificate, and a
// connection past --max-connections.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { pino } from 'pino';
import { ClusterStateSource } from '../../src/cluster/state-file/source.ts';
import { VolumeController } from '../../src/cluster/state-file/volume-controller.ts';
import { ClusterStateWriter } from '../../src/cluster/state-file/writer.ts';
import { defaultSettings } from '../../src/config.ts';
import { createExtender } from '../../src/wiring.ts';
import { TestCa } from '../helpers/certs.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { tempDir } from '../helpers/temp-dir.ts';

type Doc = { paths: Record<string, Record<string, Operation>> };
type Operation = {
  responses: Record<
    string,
    {
      description: string;
      content?: Record<string, { schema?: { properties?: { statusCode?: { enum?: number[] } } } }>;
    }
  >;
  requestBody?: { content: { 'application/json': { examples?: Record<string, { value: unknown }> } } };
  parameters?: { in: string; name: string; example?: unknown }[];
};

// Path parameters: a name the example cluster has, and one it does not. A new route with parameters goes here.
const PARAMS: Record<string, [string, string]> = {
  '/api/v1/nodes/{name}': ['/api/v1/nodes/node-a1', '/api/v1/nodes/no-such-node'],
  '/api/v1/persistentvolumeclaims/{namespace}/{name}': [
    '/api/v1/persistentvolumeclaims/default/data-db-0',
    '/api/v1/persistentvolumeclaims/default/no-such-claim',
  ],
};
const BODY_LIMIT = 64 * 1024;

let app: Awaited<ReturnType<typeof createExtender>>;
let doc: Doc;
const ca = new TestCa('openapi-ca');
let dir: string;
let tls: TestExtender;
let tlsPort: number;
let full: TestExtender;
let fullPort: number;
let holder: Socket;

before(async () => {
  const source = new ClusterStateSource({ file: 'examples/cluster.yaml', watch: false });
  app = await createExtender({
    // The example cluster as `npm start` serves it, the pending report on.
    settings: { ...defaultSettings(), bodyLimit: BODY_LIMIT, pendingReport: true },
    source,
    writer: new ClusterStateWriter(source),
    logger: pino({ level: 'silent' }),
    onStore: (store) => new VolumeController(store, source).start(),
  });
  await app.start();
  await app.app.ready();
  doc = (await app.app.inject({ url: '/openapi.json' })).json();
  dir = await tempDir('openapi-routes-');
  const files = {
    tlsCertFile: join(dir, 'tls.crt'),
    tlsKeyFile: join(dir, 'tls.key'),
    clientCaFile: join(dir, 'ca.crt'),
  };
  const server = ca.server('extender');
  writeFileSync(files.tlsCertFile, server.cert);
  writeFileSync(files.tlsKeyFile, server.key);
  writeFileSync(files.clientCaFile, ca.pem);
  tls = await createTestExtender([], files);
  await tls.extender.app.listen({ host: '127.0.0.1', port: 0 });
  tlsPort = (tls.extender.app.server.address() as { port: number }).port;
  // One connection allowed, and held: every other connection is over the limit.
  full = await createTestExtender([], { maxConnections: 1 });
  await full.extender.app.listen({ host: '127.0.0.1', port: 0 });
  fullPort = (full.extender.app.server.address() as { port: number }).port;
  holder = connect(fullPort, '127.0.0.1');
  await new Promise((resolve) => holder.once('connect', resolve));
});
after(async () => {
  holder.destroy();
  await full.close();
  await app.close();
  await tls.close();
  await rm(dir, { recursive: true, force: true });
});

/** A request on a connection past --max-connections (the test's `full` server). */
function overConnectionLimit(method: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: fullPort, method, path, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

/** A request without a client certificate to the server that requires one. */
function withoutClientCertificate(method: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', servername: 'localhost', port: tlsPort, method, path, ca: ca.pem, agent: false },
      (res) => {
        res.resume();
        resolve(res.statusCode!);
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

it('every route documents each status it answers, and its named examples get 200', async () => {
  const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([m, op]) => ({ path, method: m.toUpperCase(), op })),
  );
  // Binding changes the cluster: after everything that reads db-0 as pending.
  routes.sort((a, b) => Number(a.path === '/scheduler/bind') - Number(b.path === '/scheduler/bind'));
  for (const { path, method, op } of routes) {
    const seen = new Map<number, string>();
    const bodies = new Map<number, string>();
    const send = async (what: string, opts: { url?: string; payload?: string; type?: string }) => {
      const res = await app.app.inject({
        method: method as 'GET' | 'POST',
        url: opts.url ?? path,
        payload: opts.payload,
        headers: opts.payload === undefined ? {} : { 'content-type': opts.type ?? 'application/json' },
      });
      seen.set(res.statusCode, what);
      bodies.set(res.statusCode, res.body);
      return res;
    };
    const [known, unknown] = path.includes('{')
      ? (PARAMS[path] ?? assert.fail(`${path}: add its parameters to PARAMS`))
      : [path, path];
    if (method === 'GET') {
      await send('a known name', { url: known });
      await send('an unknown name', { url: unknown });
      // Query parameters with their documented examples, as "Try it out" fills them in: a 200.
      const query = (op.parameters ?? []).filter((p) => p.in === 'query' && p.example !== undefined);
      if (query.length > 0) {
        const url = `${known}?${new URLSearchParams(query.map((p): [string, string] => [p.name, String(p.example)]))}`;
        const res = await send('its query examples', { url });
        assert.equal(res.statusCode, 200, `GET ${url}: ${res.body}`);
        await send('a query parameter out of its values', { url: `${known}?${query.at(-1)!.name}=%00` });
      }
    } else {
      const examples = op.requestBody?.content['application/json'].examples ?? {};
      if (path.startsWith('/scheduler/') || path.startsWith('/api/v1/'))
        assert.ok(Object.keys(examples).length > 0, `${method} ${path} has a named example`);
      for (const [name, { value }] of Object.entries(examples)) {
        const res = await send(`example ${name}`, { payload: JSON.stringify(value) });
        assert.equal(res.statusCode, 200, `${method} ${path} example "${name}": ${res.body}`);
        assert.doesNotMatch(res.body, /"Error":"[^"]/, `${method} ${path} example "${name}" answers without an Error`);
      }
      await send('invalid JSON', { payload: '{"Pod":' });
      await send('a wrong field type', { payload: '{"Pod":3,"PodName":3,"namespace":3}' });
      await send('text/plain', { payload: '{}', type: 'text/plain' });
      await send('a body over --body-limit', { payload: JSON.stringify({ pad: 'x'.repeat(BODY_LIMIT) }) });
      await send('a pod not in the cache', { payload: '{"namespace":"default","name":"no-such-pod"}' });
    }
    seen.set(await overConnectionLimit(method, known), 'a connection past --max-connections');
    if (path.startsWith('/scheduler/') || path.startsWith('/api/v1/'))
      seen.set(await withoutClientCertificate(method, known), 'no client certificate, with --client-ca-file');
    for (const [status, what] of seen) {
      const documented = op.responses[String(status)];
      assert.ok(documented, `${method} ${path} answers ${status} (to ${what}) but does not document it`);
      // Swagger UI shows the schema's statusCode as the example: it must be the status it is documented under.
      const statusCodes = documented.content?.['application/json']?.schema?.properties?.statusCode?.enum;
      if (status >= 400 && bodies.has(status)) {
        assert.deepEqual(statusCodes, [status], `${method} ${path} documents ${status} with statusCode ${statusCodes}`);
        assert.equal(JSON.parse(bodies.get(status)!).statusCode, status, `${method} ${path} ${status} body`);
      }
    }
  }
});

it('every documented answer says what it is: Swagger UI shows no "Default Response"', () => {
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      for (const [status, response] of Object.entries(op.responses)) {
        assert.notEqual(response.description, 'Default Response', `${method.toUpperCase()} ${path} ${status}`);
      }
    }
  }
});
