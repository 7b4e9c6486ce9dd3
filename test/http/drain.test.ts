// Shutdown while kube-scheduler has a verb in flight (src/http/drain.ts): the verb is answered, and its keep-alive
// connection ends with the answer instead of holding close() until keepAliveTimeout (65 s, past the shutdown grace).
// Raw sockets: the request must still be arriving when close begins, and HTTP clients hide Connection: close.
import assert from 'node:assert/strict';
import net, { type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createTestExtender } from '../helpers/extender.ts';
import { node, pod } from '../helpers/objects.ts';

/** A socket's bytes so far, and a promise for its close. */
function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  const received: Buffer[] = [];
  let wake = () => {};
  socket.on('data', (d) => {
    received.push(d);
    wake();
  });
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', () => {});
  const text = () => Buffer.concat(received).toString('latin1');
  /** Waits for a whole response (headers and Content-Length bytes) and takes it off the buffer. */
  const response = async () => {
    for (;;) {
      const all = text();
      const end = all.indexOf('\r\n\r\n');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(all.slice(0, end))?.[1] ?? 0);
      if (end >= 0 && all.length >= end + 4 + length) {
        received.splice(0, received.length, Buffer.from(all.slice(end + 4 + length), 'latin1'));
        return all.slice(0, end);
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  };
  return { socket, closed, response };
}

test('a verb in flight when shutdown begins is answered with Connection: close, and close() does not wait for keep-alive', {
  timeout: 30_000,
}, async () => {
  const t = await createTestExtender([node('node-a')]);
  await t.extender.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = t.extender.app.server.address() as AddressInfo;
  const body = JSON.stringify({ Pod: pod('p', { uid: 'p' }), Nodes: null, NodeNames: ['node-a'] });
  const head = `POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
  const kubeScheduler = connect(port);

  // Before shutdown the connection is kept for the next verb.
  kubeScheduler.socket.write(head + body);
  const before = await kubeScheduler.response();
  assert.match(before, /^HTTP\/1.1 200/);
  assert.match(before, /\r\nconnection: keep-alive/i);

  // The next filter is half sent when shutdown begins (its headers read: a connection with nothing read is idle, and
  // closing drops it); the server stops listening once its closing hooks ran.
  const read = new Promise((resolve) => t.extender.app.server.once('request', resolve));
  kubeScheduler.socket.write(head + body.slice(0, 20));
  await read;
  const closing = t.close();
  await t.waitFor(() => !t.extender.app.server.listening);
  kubeScheduler.socket.write(body.slice(20));
  const during = await kubeScheduler.response();
  assert.match(during, /^HTTP\/1.1 200/, 'the verb in flight is answered, not refused');
  assert.match(during, /\r\nconnection: close/i);
  await kubeScheduler.closed;
  await closing;
});
