// A thin JSON client over client-node's own transport: client-node builds the request context, applies the
// kubeconfig's authentication (tokens, exec plugins, client certificates, TLS settings) and sends it with its fetch
// library. We parse the JSON ourselves instead of going through the generated models, because the models turn every
// timestamp into a Date and drop fields they do not know; a list of 150,000 pods also parses several times faster.
import { HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { Agent, type Dispatcher, request } from 'undici';
import pkg from '../../../package.json' with { type: 'json' };

/** Sent with every request, so the extender's calls are attributable in audit logs and API Priority and Fairness. */
export const USER_AGENT = `topology-extender/${pkg.version}`;

/** The API's `Status` object, as returned with every error response. */
export interface ApiStatus {
  kind?: 'Status';
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { name?: string; kind?: string; causes?: { message?: string }[] };
}

/** A failed API call. `code` is the HTTP status (0 for a network failure); `reason` the Status reason. */
export class KubeApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly status?: ApiStatus;
  constructor(code: number, reason: string, message: string, status?: ApiStatus) {
    super(message);
    this.name = 'KubeApiError';
    this.code = code;
    this.reason = reason;
    this.status = status;
  }

  /** 5xx, 429 and network failures: worth another try for an idempotent request. */
  get retriable(): boolean {
    return this.code === 0 || this.code === 429 || this.code >= 500;
  }
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Gone',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

export type HttpVerb = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';

export interface KubeClientOptions {
  /** Per-request deadline (a hung API server must not hang a list or a bind forever). Default 60 s. */
  timeoutMs?: number;
}

/** How long one connection pool (TLS settings, client certificate) is reused before it is built again from the kubeconfig. */
const DISPATCHER_MAX_AGE_MS = 10 * 60_000;
/**
 * How long the authentication headers are reused. client-node computes them afresh on every call (reading the CA,
 * certificate and key files and building a connection pool each time), a third of what an API call cost us; its
 * authenticators cache tokens far longer (token files a minute, exec credentials until they expire), as client-go does.
 */
const AUTH_MAX_AGE_MS = 1_000;

/** What applySecurityAuthentication decides for a request: its headers, and the pool that carries its TLS settings. */
interface Authentication {
  headers: Record<string, string>;
  dispatcher: Dispatcher;
  at: number;
}

export class KubeClient {
  readonly #kc: KubeConfig;
  readonly #timeoutMs: number;
  #auth: Authentication | undefined;
  /** Connections are reused instead of a TLS handshake each (client-node builds a new pool per call). */
  #pool: { dispatcher: Dispatcher; at: number } | undefined;
  #authenticating: Promise<Authentication> | undefined;
  /** For a kubeconfig that needs no TLS settings of its own (plain HTTP to a loopback proxy). */
  #plainPool: Agent | undefined;
  readonly server: string;

  constructor(kc: KubeConfig, options: KubeClientOptions = {}) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.#kc = kc;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.server = cluster.server.replace(/\/+$/, '');
  }

  /** The kubeconfig's authentication, reused for AUTH_MAX_AGE_MS; the pool is kept for DISPATCHER_MAX_AGE_MS. */
  #authentication(): Authentication | Promise<Authentication> {
    const now = Date.now();
    if (this.#auth && now - this.#auth.at < AUTH_MAX_AGE_MS) return this.#auth;
    this.#authenticating ??= this.#authenticate(now).finally(() => {
      this.#authenticating = undefined;
    });
    return this.#authenticating;
  }

  async #authenticate(now: number): Promise<Authentication> {
    const ctx = new RequestContext(this.server, HttpMethod.GET);
    await this.#kc.applySecurityAuthentication(ctx);
    const built = ctx.getDispatcher();
    let dispatcher: Dispatcher;
    if (!built) {
      dispatcher = this.#plainPool ??= new Agent({ connect: { keepAlive: true, keepAliveInitialDelay: 30_000 } });
    } else {
      if (!this.#pool || now - this.#pool.at > DISPATCHER_MAX_AGE_MS) this.#pool = { dispatcher: built, at: now };
      else void built.close().catch(() => {});
      dispatcher = this.#pool.dispatcher;
    }
    // client-node sets no User-Agent: ours makes the calls attributable in audit logs and API Priority and Fairness.
    this.#auth = {
      headers: { ...ctx.getHeaders(), 'user-agent': USER_AGENT, accept: 'application/json' },
      dispatcher,
      at: now,
    };
    return this.#auth;
  }

  #url(path: string, query: RequestOptions['query']): URL {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url;
  }

  /**
   * Opens a GET whose answer is read as it comes (a watch): its status and body stream, on the same pool and
   * authentication as every request. The caller reads or destroys the body; `signal` ends it.
   */
  async stream(path: string, query: RequestOptions['query'], signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    const auth = await this.#authentication();
    const answer = await request(this.#url(path, query), {
      headers: auth.headers,
      signal,
      dispatcher: auth.dispatcher,
    });
    if (answer.statusCode === 401) this.#auth = undefined;
    return answer;
  }

  /** Sends one request and returns the parsed JSON body; any non-2xx answer becomes a KubeApiError. */
  async request<T>(verb: HttpVerb, path: string, opts: RequestOptions = {}): Promise<T> {
    const url = this.#url(path, opts.query);
    // One controller and a timer cleared with the answer: AbortSignal.timeout keeps every call's signal (and, through
    // AbortSignal.any, an entry in the caller's long-lived signal) until its timer fires, 30-60 s later, and then
    // builds a DOMException for a call long answered.
    const aborter = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      aborter.abort();
    }, this.#timeoutMs);
    const cancel = () => aborter.abort(opts.signal?.reason);
    if (opts.signal?.aborted) cancel();
    else opts.signal?.addEventListener('abort', cancel);
    const signal = aborter.signal;
    let text: string;
    let code: number;
    try {
      const auth = await this.#authentication();
      const headers =
        opts.body === undefined
          ? auth.headers
          : { ...auth.headers, 'content-type': opts.contentType ?? 'application/json' };
      // undici's request, not fetch: the same pool and headers without WHATWG streams around every answer. HTTP/2 as
      // undici negotiates it: HTTP/1.1 costs less CPU per call at 8 in flight (bench/api-client.ts) but opens a
      // connection (a TLS handshake) per concurrent call, and a burst of binds made claim-less pods 0.42-0.54x.
      const response = await request(url, {
        method: verb,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal,
        dispatcher: auth.dispatcher,
      });
      code = response.statusCode;
      text = await response.body.text();
      if (code === 401) this.#auth = undefined; // a rotated token or certificate: authenticate afresh next time
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      if (timedOut) {
        throw new KubeApiError(0, 'Timeout', `${verb} ${path}: no answer within ${this.#timeoutMs} ms`);
      }
      const e = err as Error & { cause?: Error };
      const detail = e.cause?.message ? `${e.message} (${e.cause.message})` : e.message;
      throw new KubeApiError(0, 'NetworkError', `${verb} ${path}: ${detail}`);
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', cancel);
    }
    if (code >= 200 && code < 300) {
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new KubeApiError(code, 'InvalidResponse', `${verb} ${path}: answer ${code} is not JSON`);
      }
    }
    let status: ApiStatus | undefined;
    try {
      status = JSON.parse(text) as ApiStatus;
    } catch {
      status = undefined;
    }
    const reason = status?.reason || REASONS[code] || 'Unknown';
    const message = status?.message || text.slice(0, 200) || 'no message';
    throw new KubeApiError(code, reason, `${verb} ${path}: ${code} ${reason}: ${message}`, status);
  }
}
