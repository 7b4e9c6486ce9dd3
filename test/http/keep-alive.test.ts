// kube-scheduler and probes reuse keep-alive connections: an odd request must not break the next one on the socket.
// Raw sockets, because HTTP clients hide exactly what is checked here (bodies on HEAD, Connection: close).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { node } from '../helpers/objects.ts';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends each request on one socket after the previous answer is complete; returns the answers and the leftovers. */
async function onOneSocket(port: number, requests: { method: string; path: string }[]) {
  const socket = net.connect(port, '127.0.0.1');
  let buffered = Buffer.alloc(0);
  let closed = false;
  let wake = () => {};
  socket.on('data', (d) => {
    buffered = Buffer.concat([buffered, d]);
    wake();
  });
  socket.on('close', () => {
    closed = true;
    wake();
  });
  socket.on('error', () => {});
  const more = () => new Promise<void>((resolve) => (wake = resolve));
  const responses: RawResponse[] = [];
  for (const { method, path } of requests) {
    if (closed) break;
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    let end = buffered.indexOf('\r\n\r\n');
    while (end < 0 && !closed) {
      await more();
      end = buffered.indexOf('\r\n\r\n');
    }
    if (end < 0) break;
    const [statusLine, ...lines] = buffered.subarray(0, end).toString('latin1').split('\r\n');
    const headers = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    );
    const length = method === 'HEAD' ? 0 : Number(headers['content-length'] ?? 0);
    while (buffered.length < end + 4 + length && !closed) await more();
    responses.push({
      status: Number(statusLine.split(' ')[1]),
      headers,
      body: buffered.subarray(end + 4, end + 4 + length).toString(),
    });
    buffered = buffered.subarray(end + 4 + length);
  }
  // Whatever arrives after the last answer would be read as the start of the next one.
  await new Promise((resolve) => setTimeout(resolve, 50));
  socket.destroy();
  return { responses, leftover: buffered.toString('latin1'), closed };
}

let t: TestExtender;
let port: number;
before(async () => {
  t = await createTestExtender([node('node-a')]);
  await t.extender.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.extender.app.server.address() as net.AddressInfo).port;
});
after(() => t.close());

const ODD_PATHS = [
  '/%zz',
  '//',
  '/docs/../../etc/passwd',
  '/scheduler/filter?%',
  '/%00',
  '/..%2f',
  '/docs/static/../x',
];

describe('odd paths keep the keep-alive connection usable', () => {
  for (const method of ['HEAD', 'GET']) {
    for (const path of ODD_PATHS) {
      it(`${method} ${path}: a 4xx, then the next request on the socket is answered`, async () => {
        const { responses, leftover } = await onOneSocket(port, [
          { method, path },
          { method: 'GET', path: '/healthz' },
        ]);
        assert.equal(responses.length, 2, `two answers on one socket, got ${JSON.stringify(responses)}`);
        assert.ok(responses[0].status >= 400 && responses[0].status < 500, `status ${responses[0].status}`);
        assert.equal(responses[1].status, 200);
        assert.deepEqual(JSON.parse(responses[1].body), { status: 'ok' });
        assert.equal(leftover, '');
      });
    }
  }
});

describe('a request line longer than the header limit', () => {
  const long = `/${'a'.repeat(20_000)}`;
  for (const method of ['HEAD', 'GET']) {
    it(`${method}: 431 with Connection: close${method === 'HEAD' ? ' and no body' : ''}`, async () => {
      const { responses, leftover, closed } = await onOneSocket(port, [
        { method, path: long },
        { method: 'GET', path: '/healthz' },
      ]);
      assert.equal(responses[0].status, 431);
      assert.equal(responses[0].headers.connection, 'close', 'the client must not reuse this socket');
      if (method === 'GET') assert.match(responses[0].body, /"statusCode":431/);
      assert.equal(leftover, '', 'nothing after the answer (a HEAD answer has no body)');
      assert.ok(closed, 'the server closes the socket it announced it would close');
    });
  }
});
