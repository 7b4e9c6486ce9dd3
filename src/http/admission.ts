// Admission before work: open connections, bytes of request bodies held and verbs waiting to start are bounded, so
// that a scheduling burst cannot grow the heap past the memory limit (an OOM kill stops scheduling when the extender
// is not ignorable). Past a limit a request is answered 503 with Retry-After at once, from its headers: the body is
// never read (chunked bodies are counted as they stream and cut off), and the connection is closed. kube-scheduler
// fails that attempt and retries the pod: an answer in a millisecond beats one after seconds in a queue.
// The defaults follow the memory budget: the cgroup's limit (the pod's resources.limits.memory) when there is one.
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { Socket } from 'node:net';
import { type Readable, Transform } from 'node:stream';
import { getHeapStatistics } from 'node:v8';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import { clientGone } from './client-gone.ts';

/** What admission reads of the verb queue (src/http/verb-queue.ts): a verb's expected cost (ms), its recent mean. */
export interface VerbEstimates {
  estimate(verb: string): number;
}

const UNMEASURED: VerbEstimates = { estimate: () => 0 };

export type AdmissionReason = 'connections' | 'body_bytes' | 'queued_verbs' | 'queued_work';

export interface AdmissionLimits {
  /** Bytes the process should stay within; the other limits default from it. */
  memoryBudget: number;
  /** Open connections; requests on the ones past it are refused. */
  maxConnections: number;
  /** Bytes of request bodies admitted and not yet answered. */
  maxBodyBytesHeld: number;
  /** Verb requests admitted and not yet started. */
  maxQueuedVerbs: number;
  /** Expected computing time of the verbs admitted and not yet started, each at its verb's recent mean (s). */
  maxQueuedWorkSeconds: number;
}

const MiB = 2 ** 20;

/** The process's memory limit: the cgroup's when it has one, else V8's heap limit. */
export function detectMemoryBudget(): number {
  const constrained = process.constrainedMemory();
  // Without a cgroup limit Node reports 0 or a number past the machine's memory.
  if (constrained > 0 && constrained < Number.MAX_SAFE_INTEGER) return constrained;
  return getHeapStatistics().heap_size_limit;
}

/**
 * Work waiting, by default: an admitted verb starts within about a tenth of a second. A longer queue only makes
 * kube-scheduler wait longer for the same answers, and a request that waits seconds outlives V8's young generation:
 * at 5,000 nodes 256 waiting filters (a second of work) brought a major GC every two seconds and served fewer of them.
 */
export const DEFAULT_MAX_QUEUED_WORK_SECONDS = 0.1;

/**
 * The limits, each as set or derived from the budget: a connection costs little (1 per MiB), a body held costs a few
 * times its bytes once parsed and answered (1/32 of the budget, 32Mi at 1Gi: --body-limit's default), a verb waiting
 * holds its parsed body (1 per 4 MiB, 256 at 1Gi; a 3-claim filter at 5,000 nodes costs ~3 ms, so 256 wait < 1 s).
 */
export function admissionLimits(settings: Partial<AdmissionLimits>): AdmissionLimits {
  const memoryBudget = settings.memoryBudget ?? detectMemoryBudget();
  return {
    memoryBudget,
    maxConnections: settings.maxConnections ?? Math.max(16, Math.floor(memoryBudget / MiB)),
    maxBodyBytesHeld: settings.maxBodyBytesHeld ?? Math.max(MiB, Math.floor(memoryBudget / 32)),
    maxQueuedVerbs: settings.maxQueuedVerbs ?? Math.max(16, Math.floor(memoryBudget / (4 * MiB))),
    maxQueuedWorkSeconds: settings.maxQueuedWorkSeconds ?? DEFAULT_MAX_QUEUED_WORK_SECONDS,
  };
}

const SETTING: Record<AdmissionReason, string> = {
  connections: 'maxConnections',
  body_bytes: 'maxBodyBytesHeld',
  queued_verbs: 'maxQueuedVerbs',
  queued_work: 'maxQueuedWorkSeconds',
};
export const RETRY_AFTER_SECONDS = 1;

/** What a request holds until its response is done. */
interface Held {
  bytes: number;
}

/** A verb admitted and not started. */
interface Waiting {
  /** Its expected cost (ms). */
  work: number;
  /** When it was admitted (ms, the admission clock). */
  since: number;
}

type Request = IncomingMessage | Http2ServerRequest;

/** A chunked body that grew past the bytes the server may hold: answered like any other refusal. */
export class Overloaded extends Error {
  readonly statusCode = 503;
  readonly reason: AdmissionReason;
  constructor(reason: AdmissionReason, message: string) {
    super(message);
    this.name = 'Overloaded';
    this.reason = reason;
  }
}

export class Admission {
  readonly limits: AdmissionLimits;
  connections = 0;
  bodyBytes = 0;
  /** Expected computing time of the verbs admitted and not yet started (ms). */
  queuedWork = 0;
  readonly #over = new WeakSet<object>();
  readonly #held = new WeakMap<object, Held>();
  readonly #bodyLimit: number;
  readonly #now: () => number;
  readonly #onReject: (reason: AdmissionReason) => void;
  readonly #estimates: VerbEstimates;
  /** The verbs admitted and not started, by request, oldest first. */
  readonly #waiting = new Map<Request, Waiting>();

  /**
   * `bodyLimit`: a body larger than --body-limit is left to Fastify's 413, which reads none of it either.
   * `estimates`: what each verb recently took (the verb queue); `now`: the clock the verbs' waits are timed on.
   */
  constructor(
    limits: AdmissionLimits,
    bodyLimit: number,
    onReject: (reason: AdmissionReason) => void = () => {},
    estimates: VerbEstimates = UNMEASURED,
    now: () => number = () => performance.now(),
  ) {
    this.limits = limits;
    this.#bodyLimit = bodyLimit;
    this.#onReject = onReject;
    this.#estimates = estimates;
    this.#now = now;
  }

  /**
   * A new connection: counted while open; the requests of one past the limit are refused. An HTTP/2 connection
   * past it is closed at once: its streams have no socket of their own to recognise it by.
   */
  connected(socket: Socket & { alpnProtocol?: string | false }): void {
    this.connections++;
    socket.once('close', () => this.connections--);
    if (this.connections <= this.limits.maxConnections) return;
    if (socket.alpnProtocol === 'h2') {
      this.#onReject('connections');
      socket.destroy();
    } else {
      this.#over.add(socket);
    }
  }

  /**
   * Whether a request may go on, from its headers alone; reserves what it will hold until `release`. A body larger
   * than the limit is admitted only when no other body is held, so that every body --body-limit accepts gets in.
   */
  admit(raw: Request, verb: string | undefined): AdmissionReason | undefined {
    if ('socket' in raw && !('stream' in raw) && this.#over.has(raw.socket)) return 'connections';
    if (verb && this.queuedVerbs >= this.limits.maxQueuedVerbs) return 'queued_verbs';
    if (verb && this.#overQueuedWork()) return 'queued_work';
    let length = Number(raw.headers['content-length'] ?? 0) || 0;
    if (length > this.#bodyLimit) length = 0;
    if (length > 0 && this.bodyBytes > 0 && this.bodyBytes + length > this.limits.maxBodyBytesHeld) return 'body_bytes';
    this.bodyBytes += length;
    this.#held.set(raw, { bytes: length });
    if (verb) {
      const work = this.#estimates.estimate(verb);
      this.queuedWork += work;
      this.#waiting.set(raw, { work, since: this.#now() });
    }
    return undefined;
  }

  /** Verbs admitted and not yet started. */
  get queuedVerbs(): number {
    return this.#waiting.size;
  }

  /**
   * Past maxQueuedWorkSeconds only while the queue is not draining in time: the verbs waiting are expected to take that
   * long and the oldest of them has already waited that long. A burst (kube-scheduler binding many pods at once) is
   * admitted whole, bounded by maxQueuedVerbs; a sustained overload keeps about that much work waiting.
   */
  #overQueuedWork(): boolean {
    const limitMs = this.limits.maxQueuedWorkSeconds * 1000;
    const over = () => {
      if (this.queuedWork === 0 || this.queuedWork < limitMs) return false;
      const oldest = this.#waiting.values().next().value;
      return oldest !== undefined && this.#now() - oldest.since >= limitMs;
    };
    if (!over()) return false;
    // Before refusing, the verbs whose clients left stop counting: when kube-scheduler gives up on many requests at
    // once, their closes are read before or with its next request, and their 'close' events (which release them) a
    // turn or more later; that request was refused for work nobody waits for.
    for (const raw of this.#waiting.keys()) if (clientGone(raw)) this.#unqueue(raw);
    return over();
  }

  /** The verb started: it no longer waits. */
  started(raw: Request): void {
    this.#unqueue(raw);
  }

  #unqueue(raw: Request): void {
    const waiting = this.#waiting.get(raw);
    if (!waiting) return;
    this.#waiting.delete(raw);
    // Sums of floats drift: an empty queue holds no work.
    this.queuedWork = this.#waiting.size === 0 ? 0 : this.queuedWork - waiting.work;
  }

  /** The response is done (sent, or the connection closed): what the request held is free. */
  release(raw: Request): void {
    this.#unqueue(raw);
    const held = this.#held.get(raw);
    if (!held) return;
    this.#held.delete(raw);
    this.bodyBytes -= held.bytes;
  }

  /** Counts a body without Content-Length as it streams; past the limit the stream fails with Overloaded. */
  counted(raw: object): Transform {
    const held = this.#held.get(raw);
    return new Transform({
      transform: (chunk: Buffer, _encoding, next) => {
        if (held) {
          held.bytes += chunk.length;
          this.bodyBytes += chunk.length;
          if (this.bodyBytes > this.limits.maxBodyBytesHeld && this.bodyBytes > held.bytes) {
            this.#onReject('body_bytes');
            return next(new Overloaded('body_bytes', this.message('body_bytes')));
          }
        }
        next(null, chunk);
      },
    });
  }

  message(reason: AdmissionReason): string {
    const what =
      reason === 'connections'
        ? `${this.limits.maxConnections} connections are open`
        : reason === 'queued_verbs'
          ? `${this.limits.maxQueuedVerbs} verbs are waiting to start`
          : reason === 'queued_work'
            ? `the ${this.queuedVerbs} verbs waiting to start will take about ${(this.queuedWork / 1000).toFixed(3)} s`
            : `${(this.limits.maxBodyBytesHeld / MiB).toFixed(1)} MiB of request bodies are held`;
    return `overloaded: ${what} (${SETTING[reason]}); retry after ${RETRY_AFTER_SECONDS} s`;
  }

  reject(reason: AdmissionReason): void {
    this.#onReject(reason);
  }
}

/**
 * The 503 every refusal gets. A refusal for the verbs waiting (their number or their work) keeps the connection (Node
 * discards the small body unparsed, and kube-scheduler's retry reuses it); the others close it (HTTP/1.1), with the
 * unread body.
 */
export function answerOverloaded(
  request: FastifyRequest,
  reply: FastifyReply,
  reason: AdmissionReason,
  message: string,
): FastifyReply {
  const waiting = reason === 'queued_verbs' || reason === 'queued_work';
  if (!waiting && request.raw.httpVersionMajor === 1) reply.header('connection', 'close');
  return reply
    .code(503)
    .header('retry-after', String(RETRY_AFTER_SECONDS))
    .send({ statusCode: 503, code: 'OVERLOADED', error: 'Service Unavailable', message });
}

/** What admission needs to know of a request's route. */
export interface AdmissionRoutes {
  /** The scheduler verb a request calls, if any. */
  verb: (request: FastifyRequest) => string | undefined;
  /** Always served, uncounted: the probes and /metrics (a refused liveness probe would restart the pod). */
  exempt: (request: FastifyRequest) => boolean;
}

/**
 * The onRequest hook: admits a request from its headers, before anything reads its body, and releases what it holds
 * when its response is done (sent, or the connection closed).
 */
export function admitRequest(admission: Admission, routes: AdmissionRoutes) {
  return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
    const reason = routes.exempt(request) ? undefined : admission.admit(request.raw, routes.verb(request));
    if (reason === undefined) {
      // 'close' when the connection goes first; 'finish' alone from light-my-request (inject).
      const release = () => admission.release(request.raw);
      reply.raw.once('finish', release).once('close', release);
      done();
      return;
    }
    admission.reject(reason);
    request.verbDropped = true;
    answerOverloaded(request, reply, reason, admission.message(reason));
  };
}

/** The preParsing hook: a POST body without Content-Length (chunked; HTTP/2 may omit it) is counted as it streams. */
export function countUnsizedBody(admission: Admission, routes: AdmissionRoutes) {
  return (
    request: FastifyRequest,
    _reply: FastifyReply,
    payload: Readable,
    done: (err: Error | null, stream?: Readable) => void,
  ): void => {
    if (request.method !== 'POST' || request.headers['content-length'] !== undefined || routes.exempt(request)) {
      done(null, payload);
      return;
    }
    const counted = admission.counted(request.raw);
    payload.on('error', (err) => counted.destroy(err));
    done(null, payload.pipe(counted));
  };
}

/** What admission holds and its limits, per resource, read on scrape. */
export function admissionGauges(registry: Registry, admission: Admission): void {
  const perResource = (name: string, help: string, values: () => Record<string, number>) =>
    new Gauge({
      name,
      help,
      labelNames: ['resource'],
      registers: [registry],
      collect() {
        for (const [resource, value] of Object.entries(values())) this.set({ resource }, value);
      },
    });
  const { limits } = admission;
  perResource(
    'topology_extender_admission_held',
    'Open connections, bytes of request bodies held, verbs admitted and not started, and their expected computing ' +
      'time in seconds (resource label)',
    () => ({
      connections: admission.connections,
      body_bytes: admission.bodyBytes,
      queued_verbs: admission.queuedVerbs,
      queued_work_seconds: admission.queuedWork / 1000,
    }),
  );
  perResource(
    'topology_extender_admission_limit',
    'The admission limits in force (resource label; memory_budget: the budget they derive from)',
    () => ({
      memory_budget: limits.memoryBudget,
      connections: limits.maxConnections,
      body_bytes: limits.maxBodyBytesHeld,
      queued_verbs: limits.maxQueuedVerbs,
      queued_work_seconds: limits.maxQueuedWorkSeconds,
    }),
  );
}
