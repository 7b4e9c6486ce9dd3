// Whether a request's client has gone, as far as Node has read: what the verb queue checks before computing a verb,
// and what admission checks before counting a waiting verb as work.
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';

/**
 * The client closed the connection (HTTP/1.1: Node's server aborts the request on the client's FIN and ends the
 * socket, so no answer can reach it) or cancelled the stream (HTTP/2). The socket's state changes when the FIN is
 * read, a turn or more before the request's 'close' event.
 */
export function clientGone(raw: IncomingMessage | Http2ServerRequest): boolean {
  if ('stream' in raw) return raw.stream.destroyed || raw.stream.closed || (raw.stream.session?.destroyed ?? true);
  // `=== true` and `=== false`: an injected request's socket (light-my-request) has none of these.
  const socket = raw.socket;
  return socket?.destroyed === true || socket?.readableEnded === true || socket?.writable === false;
}
