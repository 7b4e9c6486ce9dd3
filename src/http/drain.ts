// Closing a server lets the requests in flight finish. Node then drops the keep-alive connections that are idle at
// that moment, and Fastify answers requests that arrive after it with 503 and "Connection: close". A response still
// being computed when close began, though, goes out with "Connection: keep-alive": its connection stays open until
// keepAliveTimeout (65 s), and so does close(). At SIGTERM with one kube-scheduler verb in flight, shutdown outlived
// its grace and the process was killed.
import type { onSendHookHandler, preCloseAsyncHookHandler } from 'fastify';

/**
 * Hooks that make every HTTP/1.1 response sent once the app is closing end its connection (Fastify closes HTTP/2
 * sessions with a GOAWAY itself). Add both: `preClose` marks the start of closing, `onSend` says "Connection: close".
 */
export function closeConnectionsOnceAnswered(): { preClose: preCloseAsyncHookHandler; onSend: onSendHookHandler } {
  let closing = false;
  return {
    preClose: async () => {
      closing = true;
    },
    onSend: (request, reply, payload, done) => {
      if (closing && request.raw.httpVersionMajor < 2) reply.header('connection', 'close');
      done(null, payload);
    },
  };
}
