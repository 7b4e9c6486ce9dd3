// A thin JSON client over client-node's own transport: client-node builds the request context, applies the
// kubeconfig's authentication (tokens, exec plugins, client certificates, TLS settings) and sends it with its fetch
// library. We parse the JSON ourselves instead of going through the generated models, because the models turn every
// timestamp into a Date and drop fields they do not know; a list of 150,000 pods also parses several times faster.
import { HttpMethod, IsomorphicFetchHttpLibrary, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import pkg from '../../../package.json' with { type: 'json' };

/** Sent with every request, so the extender's calls are attributable in audit logs and API Priority and Fairness. */
export const USER_AGENT = `topology-extender/${pkg.version}`;

/**
 * The kubeconfig with our User-Agent added to its authentication. Our requests and client-node's Watch both take
 * their headers from applySecurityAuthentication, which sets no User-Agent (undici would send `node`).
 */
function withUserAgent(kc: KubeConfig): KubeConfig {
  const identified = Object.create(kc) as KubeConfig;
  identified.applySecurityAuthentication = async (ctx) => {
    await kc.applySecurityAuthentication(ctx);
    ctx.setHeaderParam('User-Agent', USER_AGENT);
  };
  return identified;
}

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

const METHODS: Record<HttpVerb, HttpMethod> = {
  GET: HttpMethod.GET,
  PUT: HttpMethod.PUT,
  POST: HttpMethod.POST,
  PATCH: HttpMethod.PATCH,
  DELETE: HttpMethod.DELETE,
};

export interface KubeClientOptions {
  /** Per-request deadline (a hung API server must not hang a list or a bind forever). Default 60 s. */
  timeoutMs?: number;
}

/** How long one connection pool (TLS settings, client certificate) is reused before it is built again from the kubeconfig. */
const DISPATCHER_MAX_AGE_MS = 10 * 60_000;

export class KubeClient {
  readonly #kc: KubeConfig;
  readonly #http = new IsomorphicFetchHttpLibrary();
  readonly #timeoutMs: number;
  #dispatcher: { value: NonNullable<ReturnType<RequestContext['getDispatcher']>>; at: number } | undefined;
  readonly server: string;

  constructor(kc: KubeConfig, options: KubeClientOptions = {}) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.#kc = withUserAgent(kc);
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.server = cluster.server.replace(/\/+$/, '');
  }

  /** The kubeconfig with our User-Agent, for client-node's Watch. */
  get kubeConfig(): KubeConfig {
    return this.#kc;
  }

  /** Sends one request and returns the parsed JSON body; any non-2xx answer becomes a KubeApiError. */
  async request<T>(verb: HttpVerb, path: string, opts: RequestOptions = {}): Promise<T> {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(opts.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const ctx = new RequestContext(url.toString(), METHODS[verb]);
    ctx.setHeaderParam('Accept', 'application/json');
    if (opts.body !== undefined) {
      ctx.setHeaderParam('Content-Type', opts.contentType ?? 'application/json');
      ctx.setBody(JSON.stringify(opts.body));
    }
    const deadline = AbortSignal.timeout(this.#timeoutMs);
    ctx.setSignal(opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline);
    let text: string;
    let code: number;
    try {
      // Headers (tokens, exec plugins) are applied to every request; the connection pool is kept, so list pages
      // and writes reuse connections instead of a TLS handshake each (client-node builds a new pool per call).
      await this.#kc.applySecurityAuthentication(ctx);
      const now = Date.now();
      const built = ctx.getDispatcher();
      if (built) {
        if (!this.#dispatcher || now - this.#dispatcher.at > DISPATCHER_MAX_AGE_MS) {
          this.#dispatcher = { value: built, at: now };
        } else if (built !== this.#dispatcher.value) {
          ctx.setDispatcher(this.#dispatcher.value);
          void built.close().catch(() => {});
        }
      }
      const response = await this.#http.send(ctx).toPromise();
      code = response.httpStatusCode;
      text = await response.body.text();
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      if (deadline.aborted) {
        throw new KubeApiError(0, 'Timeout', `${verb} ${path}: no answer within ${this.#timeoutMs} ms`);
      }
      const e = err as Error & { cause?: Error };
      const detail = e.cause?.message ? `${e.message} (${e.cause.message})` : e.message;
      throw new KubeApiError(0, 'NetworkError', `${verb} ${path}: ${detail}`);
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
