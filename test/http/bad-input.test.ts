// Bad input gets a 4xx JSON error naming the problem, never a 500 or a crash, and the next good request is served.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { node, pod } from '../helpers/objects.ts';

const GOOD = JSON.stringify({
  Pod: { metadata: { name: 'p', namespace: 'default', uid: 'u-1' }, spec: { containers: [{ name: 'c' }] } },
  Nodes: null,
  NodeNames: ['node-a'],
});

let t: TestExtender;
before(async () => {
  t = await createTestExtender([node('node-a'), pod('p', { uid: 'u-1' })], { bodyLimit: 64 * 1024 });
});
after(() => t.close());

async function expectRejected(
  send: () => Promise<{ status: number; body: { message?: string; statusCode?: number } }>,
  status: number,
  message: RegExp,
) {
  const res = await send();
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.statusCode, status);
  assert.match(res.body.message ?? '', message);
  const good = await t.request.post('/scheduler/filter').set('Content-Type', 'application/json').send(GOOD);
  assert.equal(good.status, 200, 'the next good request is served');
  assert.deepEqual(good.body.NodeNames, ['node-a']);
}

const postRaw = (path: string, body: string, type = 'application/json') =>
  t.request.post(path).set('Content-Type', type).send(body);

/** GOOD with the pod's first container, spec or metadata changed. */
interface LoosePod {
  metadata: Record<string, unknown>;
  spec: { containers: Record<string, unknown>[]; initContainers?: unknown[] };
  status?: unknown;
}
function withPod(change: (pod: LoosePod) => void): string {
  const args = JSON.parse(GOOD);
  change(args.Pod);
  return JSON.stringify(args);
}

/** Non-cache mode: one node the cache does not know, sent whole, with `status` as given. */
function unknownNode(status: unknown): string {
  const node = { metadata: { name: 'node-new' }, status };
  return JSON.stringify({ Pod: JSON.parse(GOOD).Pod, Nodes: { items: [node] }, NodeNames: null });
}

// Bodies that once answered 500: each field scheduling reads has its type checked at the edge.
describe('the pod and node fields scheduling reads are typed: 400 naming the field', () => {
  const cases: [string, string, RegExp][] = [
    [
      'a null entry in ports',
      withPod((p) => {
        p.spec.containers[0].ports = [null];
      }),
      /containers\/0\/ports\/0/,
    ],
    [
      'ports given as a string',
      withPod((p) => {
        p.spec.containers[0].ports = '80';
      }),
      /containers\/0\/ports/,
    ],
    [
      'ports given as an object',
      withPod((p) => {
        p.spec.containers[0].ports = { hostPort: 80 };
      }),
      /containers\/0\/ports/,
    ],
    [
      'a container image of null',
      withPod((p) => {
        p.spec.containers[0].image = null;
      }),
      /containers\/0\/image/,
    ],
    [
      'an init container image of null',
      withPod((p) => {
        p.spec.initContainers = [{ name: 'i', image: null }];
      }),
      /initContainers\/0\/image/,
    ],
    [
      'status.startTime as an object',
      withPod((p) => {
        p.status = { startTime: {} };
      }),
      /status\/startTime/,
    ],
    [
      'metadata.creationTimestamp as an object',
      withPod((p) => {
        p.metadata.creationTimestamp = { seconds: 1 };
      }),
      /metadata\/creationTimestamp/,
    ],
    [
      'metadata.deletionTimestamp as an object',
      withPod((p) => {
        p.metadata.deletionTimestamp = [];
      }),
      /metadata\/deletionTimestamp/,
    ],
    ['an unknown node whose status.images is an object', unknownNode({ images: {} }), /status\/images/],
    ['an unknown node whose status.images is [null]', unknownNode({ images: [null] }), /status\/images\/0/],
    [
      'an unknown node whose image names are false',
      unknownNode({ images: [{ names: false }] }),
      /status\/images\/0\/names/,
    ],
    [
      'a request quantity that is not a quantity',
      withPod((p) => {
        p.spec.containers[0].resources = { requests: { cpu: 'lots' } };
      }),
      /resources\/requests\/cpu/,
    ],
  ];
  for (const [what, body, field] of cases) {
    for (const verb of ['filter', 'prioritize']) {
      it(`${verb}: ${what}`, () => expectRejected(() => postRaw(`/scheduler/${verb}`, body), 400, field));
    }
  }

  it('rejects a node nested thousands of levels deep instead of echoing it back', () => {
    // Written as text: JSON.stringify itself overflows on such a value, which is the point.
    const deep = `${'{"d":'.repeat(8_000)}"bottom"${'}'.repeat(8_000)}`;
    const node = `{"metadata":{"name":"node-new"},"spec":{"deep":${deep}}}`;
    const body = `{"Pod":${JSON.stringify(JSON.parse(GOOD).Pod)},"Nodes":{"items":[${node}]},"NodeNames":null}`;
    return expectRejected(() => postRaw('/scheduler/filter', body), 400, /Nodes\/items\/0.*nested/);
  });
});

describe('bad input on the verbs', () => {
  it('rejects invalid JSON with 400', () =>
    expectRejected(() => postRaw('/scheduler/filter', '{"Pod": {'), 400, /JSON|Unexpected|Expected/i));

  it('rejects an empty body with 400', () => expectRejected(() => postRaw('/scheduler/filter', ''), 400, /empty/i));

  it('rejects a wrong content type with 415', () =>
    expectRejected(() => postRaw('/scheduler/filter', GOOD, 'text/plain'), 415, /text\/plain/));

  it('rejects a request without Pod with 400 naming Pod', () =>
    expectRejected(() => postRaw('/scheduler/filter', '{"Nodes":null,"NodeNames":["node-a"]}'), 400, /Pod/));

  it('rejects NodeNames of the wrong type with 400 naming NodeNames', () =>
    expectRejected(() => postRaw('/scheduler/filter', GOOD.replace('["node-a"]', '"node-a"')), 400, /NodeNames/));

  it('rejects a pod without a UID with 400 naming uid', () =>
    expectRejected(() => postRaw('/scheduler/prioritize', GOOD.replace('"uid":"u-1"', '"x":"y"')), 400, /uid/));

  it('rejects a request with neither NodeNames nor Nodes with 400 saying so', () =>
    expectRejected(
      () => postRaw('/scheduler/filter', GOOD.replace('"NodeNames":["node-a"]', '"NodeNames":null')),
      400,
      /NodeNames .* Nodes\.items/,
    ));

  it('rejects a fractional NumPDBViolations in preempt with 400', () =>
    expectRejected(
      () =>
        postRaw(
          '/scheduler/preempt',
          JSON.stringify({
            Pod: JSON.parse(GOOD).Pod,
            NodeNameToMetaVictims: { 'node-a': { Pods: [{ UID: 'x' }], NumPDBViolations: 0.5 } },
          }),
        ),
      400,
      /NumPDBViolations/,
    ));

  it('rejects a bind without PodUID with 400 naming PodUID', () =>
    expectRejected(
      () => postRaw('/scheduler/bind', '{"PodName":"p","PodNamespace":"default","Node":"node-a"}'),
      400,
      /PodUID/,
    ));

  it('rejects a body over the configured limit with 413 naming the limit and the flag that raises it', () =>
    expectRejected(
      () =>
        postRaw(
          '/scheduler/filter',
          GOOD.replace('["node-a"]', JSON.stringify(Array.from({ length: 10_000 }, (_, i) => `node-${i}`))),
        ),
      413,
      /^the request body is larger than --body-limit \(65536 bytes, 64Ki\): raise --body-limit \(setting bodyLimit\)/,
    ));

  it('answers an unknown path with a 404 naming it', () =>
    expectRejected(() => postRaw('/scheduler/explode', GOOD), 404, /\/scheduler\/explode/));

  it('answers the wrong method with 405 and the methods the route takes in Allow', async () => {
    for (const path of [
      '/scheduler/filter',
      '/scheduler/prioritize',
      '/scheduler/preempt',
      '/scheduler/bind',
      '/api/v1/explain',
      '/api/v1/simulate',
    ]) {
      for (const method of ['get', 'put', 'delete'] as const) {
        const res = await t.request[method](path);
        assert.equal(res.status, 405, `${method} ${path}: ${JSON.stringify(res.body)}`);
        assert.equal(res.headers.allow, 'POST', `${method} ${path}`);
        assert.equal(res.body.message, `${method.toUpperCase()} ${path}: this route takes POST only`);
      }
    }
    // A GET route, a parametric one too, and a query string that names no route.
    const post = await t.request.post('/api/v1/nodes/node-a').send({});
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
    assert.equal((await t.request.delete('/readyz?verbose=1')).headers.allow, 'GET, HEAD');
    await expectRejected(() => t.request.get('/scheduler/explode'), 404, /no route GET \/scheduler\/explode/);
  });
});
