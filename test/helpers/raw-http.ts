// HTTP/1.1 over plain sockets, for tests that need what a client library hides: a request sent and its connection
// closed at once (a client that gave up), several requests on chosen connections.
import { connect, type Socket } from 'node:net';

/** A connection to 127.0.0.1:`port`, once connected. */
export const openSocket = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });

/** A request's bytes, JSON body and Content-Length included. */
export const httpRequest = (method: string, path: string, body = '') =>
  `${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** One full request on the socket, so the server has accepted it and reads from it; the answer's first chunk. */
export const roundTrip = (s: Socket, raw: string) =>
  new Promise<string>((resolve) => {
    s.once('data', (d) => resolve(d.toString()));
    s.write(raw);
  });
