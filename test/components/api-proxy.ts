// A fault-injecting proxy in front of the real kube-apiserver, for what a healthy API server will not do on request:
// answer a call with an error, apply a write and lose its reply, cut every watch, hold watch events back (a quiet
// or stalled watch), or hold requests back until the test lets them go (a slow API server). Everything else passes
// through untouched, authentication included, so the API server still authenticates and authorizes the client as
// itself. Clients reach it over plain HTTP on loopback.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  method: string;
  /** The path without the query. */
  path: string;
  watch: boolean;
  /** The status the client got (0 while a watch is open, or when its reply was lost). */
  status: number;
  /** The client's User-Agent header. */
  userAgent?: string;
  /** The request's content-type header (a write's patch type). */
  contentType?: string;
}

interface Fault {
  path: RegExp;
  method?: string;
  remaining: number;
  /** Matching requests still to let through untouched before the fault applies. */
  skip: number;
  /**
   * An HTTP status to answer without forwarding; `lose`: forward, then reset the client's connection; `gone`: answer
   * a watch as kube-apiserver does when its resourceVersion was compacted away (200, one ERROR event with a 410).
   */
  action: number | 'lose' | 'gone';
  /** Matches watches only. */
  watchOnly?: boolean;
}

export interface ApiProxy {
  url: string;
  /** Every request seen, in order. */
  requests: ProxiedRequest[];
  /**
   * The next `count` requests matching answer `status` (a Status object) without reaching the API server; with `skip`,
   * only after that many matching requests went through untouched (a write refused after a first one succeeded).
   */
  failNext(path: RegExp, count: number, status: number, method?: string, skip?: number): void;
  /** The next `count` matching requests reach the API server, which applies them; the client's connection is reset. */
  loseReplyNext(path: RegExp, count: number, method?: string): void;
  /** The next `count` watches of `path` answer `status` without reaching the API server (lists pass). */
  failNextWatch(path: RegExp, count: number, status: number): void;
  /**
   * The next `count` watches of `path` end at once with the ERROR event (410 Expired) kube-apiserver sends for a
   * resourceVersion older than its watch cache and etcd still hold: a real one does so only after compaction.
   */
  expireNextWatch(path: RegExp, count: number): void;
  /** Ends every open watch, as an API server restart or a load balancer would. */
  dropWatches(): void;
  /** While on, open watches deliver nothing (no event, no bookmark); what was held flows when it is turned off. */
  silenceWatches(on: boolean): void;
  /** Requests matching (from now on) wait, unforwarded, until the returned release lets them and later ones through. */
  hold(match: (request: ProxiedRequest) => boolean): () => void;
  /**
   * `GET /version` answers as a kube-apiserver of `release` (e.g. v1.35.4) would, undefined: the real one's answer.
   * The control plane here is one release; a kube-scheduler of an older one runs against a control plane of its own
   * minor in a real cluster, and the extender names the minor it reads there.
   */
  serveVersion(release: string | undefined): void;
  stop(): Promise<void>;
}

const REASONS: Record<number, string> = {
  403: 'Forbidden',
  409: 'Conflict',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

export async function startApiProxy(upstream: string, ca: string): Promise<ApiProxy> {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true, ca });
  const requests: ProxiedRequest[] = [];
  const faults: Fault[] = [];
  const watches = new Set<{ upstream: IncomingMessage; client: ServerResponse }>();
  let silent = false;
  let version: string | undefined;
  const holds = new Set<{ match: (request: ProxiedRequest) => boolean; released: Promise<void> }>();

  const faultFor = (method: string, path: string, watch: boolean) => {
    const fault = faults.find(
      (f) => f.remaining > 0 && f.path.test(path) && (!f.method || f.method === method) && (!f.watchOnly || watch),
    );
    if (fault && fault.skip > 0) {
      fault.skip--;
      return undefined;
    }
    if (fault) fault.remaining--;
    return fault;
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
    const seen: ProxiedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      watch,
      status: 0,
      userAgent: req.headers['user-agent'],
      contentType: req.headers['content-type'],
    };
    requests.push(seen);
    if (version && seen.method === 'GET' && seen.path === '/version') {
      req.resume();
      seen.status = 200;
      const [major, minor] = version.slice(1).split('.');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ major, minor, gitVersion: version }));
      return;
    }
    const fault = faultFor(seen.method, seen.path, watch);
    if (fault?.action === 'gone') {
      req.resume();
      seen.status = 200;
      res.writeHead(200, { 'content-type': 'application/json' });
      const rv = url.searchParams.get('resourceVersion') ?? '0';
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `too old resource version: ${rv} (injected by the test's API proxy)`,
        reason: 'Expired',
        code: 410,
      };
      res.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      return;
    }
    if (typeof fault?.action === 'number') {
      const code = fault.action;
      req.resume();
      seen.status = code;
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          message: `injected by the test's API proxy: ${code}`,
          reason: REASONS[code] ?? 'InternalError',
          code,
        }),
      );
      return;
    }
    const held = [...holds].find((h) => h.match(seen));
    if (held) void held.released.then(() => forwardRequest(req, res, seen, watch, fault));
    else forwardRequest(req, res, seen, watch, fault);
  });

  function forwardRequest(
    req: IncomingMessage,
    res: ServerResponse,
    seen: ProxiedRequest,
    watch: boolean,
    fault: Fault | undefined,
  ): void {
    if (res.destroyed) return;
    const forward = httpsRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
        agent,
      },
      (answer) => {
        if (fault?.action === 'lose') {
          answer.resume();
          answer.once('end', () => req.socket.resetAndDestroy());
          return;
        }
        if (!watch) seen.status = answer.statusCode ?? 0;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (!watch) {
          answer.pipe(res);
          return;
        }
        // kube-apiserver sends a watch's headers at once, before any event: so must a transparent proxy.
        res.flushHeaders();
        const pair = { upstream: answer, client: res };
        watches.add(pair);
        answer.pipe(res);
        if (silent) answer.pause();
        const end = () => watches.delete(pair);
        res.once('close', () => {
          end();
          answer.destroy();
        });
        answer.once('close', end);
      },
    );
    forward.on('error', (err) => {
      if (res.headersSent) res.destroy();
      else {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`API proxy: ${err.message}`);
      }
    });
    req.pipe(forward);
  }
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failNext(path, count, status, method, skip = 0) {
      faults.push({ path, method, remaining: count, skip, action: status });
    },
    loseReplyNext(path, count, method) {
      faults.push({ path, method, remaining: count, skip: 0, action: 'lose' });
    },
    failNextWatch(path, count, status) {
      faults.push({ path, method: 'GET', remaining: count, skip: 0, action: status, watchOnly: true });
    },
    expireNextWatch(path, count) {
      faults.push({ path, method: 'GET', remaining: count, skip: 0, action: 'gone', watchOnly: true });
    },
    dropWatches() {
      for (const { upstream: answer, client } of watches) {
        answer.destroy();
        client.destroy();
      }
      watches.clear();
    },
    silenceWatches(on) {
      silent = on;
      for (const { upstream: answer } of watches) {
        if (on) answer.pause();
        else answer.resume();
      }
    },
    hold(match) {
      let release!: () => void;
      const hold = { match, released: new Promise<void>((resolve) => (release = resolve)) };
      holds.add(hold);
      return () => {
        holds.delete(hold);
        release();
      };
    },
    serveVersion(release) {
      version = release;
    },
    async stop() {
      server.closeAllConnections();
      server.close();
      agent.destroy();
    },
  };
}
