// Answers to errors Node's HTTP parser raises before a request exists (header overflow, a malformed request line, a
// request timeout). Fastify's default sends a JSON body even to HEAD and no "Connection: close" before it destroys
// the socket: a keep-alive client then reads the body as its next response, or reuses a socket that is going away.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

const STATUS: Record<string, number> = { HPE_HEADER_OVERFLOW: 431, ERR_HTTP_REQUEST_TIMEOUT: 408 };

/** Fastify's clientErrorHandler. `rawPacket` is what the parser had read of the request (a Buffer). */
export function answerClientError(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const status = STATUS[err.code ?? ''] ?? 400;
  const body = JSON.stringify({ statusCode: status, error: STATUS_CODES[status], message: err.message });
  // The request line may be all there is of the request; HEAD gets the headers a GET would get and no body.
  const head = Buffer.isBuffer(err.rawPacket) && err.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  const response =
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${head ? '' : body}`;
  if (socket.writable) socket.end(response);
  else socket.destroy();
}
