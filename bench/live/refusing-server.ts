// bench-helper
// The overload bench's floor for 503s: a process that refuses every request at once with the extender's 503 (same
// status, headers and body size), without reading the body. The open loop's 503 latencies against it are what the
// machine, the client and the kernel cost; whatever the extender adds is above them.
// --busy-core: a second thread computes without pause meanwhile, as an overloaded extender's main thread does: the
// floor for refusals answered by a thread of their own while one core of the machine is taken (the best a server
// that also computes could do).
// Prints its port on stdout; exits when its stdin closes (its parent, bench/live/overload.ts, is gone), so a
// crashed bench leaves no process listening, or a core spinning.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';

if (process.argv.includes('--busy-core')) new Worker('for (;;);', { eval: true }).unref();

const body = JSON.stringify({
  statusCode: 503,
  code: 'OVERLOADED',
  error: 'Service Unavailable',
  message: 'overloaded: 256 verbs are waiting to start (maxQueuedVerbs); retry after 1 s',
});
const server = createServer((_req, res) => {
  res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' }).end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port));
process.stdin.on('end', () => process.exit(0)).resume();
