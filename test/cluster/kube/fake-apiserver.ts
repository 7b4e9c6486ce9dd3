// A fake of kube-apiserver for the extender's own client tests (test/cluster/kube, test/extender/bind.test.ts,
// test/ops/cache-comparer.test.ts) and the ingest benches (bench/live, bench/results.ts). Every end-to-end suite runs
// on a real control plane (test/e2e/scheduler-cluster.ts); this stays only for what a real kube-apiserver cannot be
// made to do in those tests:
// - expire history on demand (compact()): a continue token that expires between two pages the client asks for, a
//   watch whose resourceVersion is 410 Gone after the client saw it (source.test.ts). kube-apiserver compacts etcd at
//   an interval (--etcd-compaction-interval, 5 min by default), not at a moment a test picks, and its watch cache
//   keeps a window of its own choosing.
// - delay or hang answers at a chosen moment (delay(), hold(), loseReplyNext 'hang'): a watch connect that never
//   answers, a write held until the client's watch has seen its effect, a request timed out after the write applied.
// - apply a write and lose its reply (loseReplyNext), fail chosen requests with 5xx (failNext) and force a 409
//   (conflictNextPatch), in a scripted order the tests assert exactly ([201 lost, 500, 500, 500]).
// - hold every watch event back while reads and writes go on, then deliver them (silenceWatches), drop or end every
//   stream at once (dropWatches, endWatches), and send bookmarks every few ms (bookmarkIntervalMs): a real one sends
//   the first bookmark on a quiet watch only ~120 s after it opened, on no schedule a client sets.
// - count requests exactly: every request (query, Authorization, User-Agent) and every write (body, content type,
//   status, lost or not) in arrival order, readable synchronously the moment it is answered, faults included.
// - serve 150,000 pods from memory, loaded in seconds without history (load()), and write 10,000 watch events as fast
//   as a reader reads them: through a real kube-apiserver and etcd on these 2 cores each object goes through
//   admission and storage one by one, and an ingest bench would measure the API server rather than the extender.
// A fault-injecting proxy in front of a real kube-apiserver could do the faults, not the compaction, the silenced
// watches or the bookmarks; and these tests run in milliseconds in `npm test` on a machine without Go.
//
// What it serves is what the extender's client sends, nothing more: /version; the 15 kinds it lists and watches
// (src/cluster/kube/resources.ts) in memory, one global resourceVersion counter and a bounded event history;
// paginated LIST (limit/continue, 410 Expired); WATCH as JSON lines (ADDED/MODIFIED/DELETED/BOOKMARK, replay from a
// resourceVersion, 410 Gone once compacted, timeoutSeconds); GET; JSON merge PATCH with resourceVersion and UID
// preconditions (409); POST pods/{name}/binding with its UID precondition; TLS with a given certificate. Options and
// media types it does not serve are refused, never ignored.
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { tempDir } from '../../helpers/temp-dir.ts';

export interface FakeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

interface ResourceType {
  kind: string;
  apiVersion: string;
  plural: string;
  namespaced: boolean;
}

// The kinds the extender's client lists and watches (src/cluster/kube/resources.ts), nothing more.
const TYPES: ResourceType[] = [
  { kind: 'Namespace', apiVersion: 'v1', plural: 'namespaces', namespaced: false },
  { kind: 'Node', apiVersion: 'v1', plural: 'nodes', namespaced: false },
  { kind: 'Pod', apiVersion: 'v1', plural: 'pods', namespaced: true },
  { kind: 'PersistentVolume', apiVersion: 'v1', plural: 'persistentvolumes', namespaced: false },
  { kind: 'PersistentVolumeClaim', apiVersion: 'v1', plural: 'persistentvolumeclaims', namespaced: true },
  { kind: 'Service', apiVersion: 'v1', plural: 'services', namespaced: true },
  { kind: 'ReplicationController', apiVersion: 'v1', plural: 'replicationcontrollers', namespaced: true },
  { kind: 'ReplicaSet', apiVersion: 'apps/v1', plural: 'replicasets', namespaced: true },
  { kind: 'StatefulSet', apiVersion: 'apps/v1', plural: 'statefulsets', namespaced: true },
  { kind: 'StorageClass', apiVersion: 'storage.k8s.io/v1', plural: 'storageclasses', namespaced: false },
  { kind: 'CSINode', apiVersion: 'storage.k8s.io/v1', plural: 'csinodes', namespaced: false },
  { kind: 'CSIDriver', apiVersion: 'storage.k8s.io/v1', plural: 'csidrivers', namespaced: false },
  { kind: 'CSIStorageCapacity', apiVersion: 'storage.k8s.io/v1', plural: 'csistoragecapacities', namespaced: true },
  { kind: 'PodDisruptionBudget', apiVersion: 'policy/v1', plural: 'poddisruptionbudgets', namespaced: true },
  { kind: 'PriorityClass', apiVersion: 'scheduling.k8s.io/v1', plural: 'priorityclasses', namespaced: false },
];

/** By `apiVersion/kind` and by kind alone. */
const BY_KIND = new Map<string, ResourceType>();
for (const t of TYPES) {
  BY_KIND.set(`${t.apiVersion}/${t.kind}`, t);
  BY_KIND.set(t.kind, t);
}
const BY_PATH = new Map(TYPES.map((t) => [`${t.apiVersion}/${t.plural}`, t]));

/** One write as the server saw it, in arrival order (also the refused ones). */
export interface RecordedWrite {
  method: string;
  path: string;
  /** Parsed request body. */
  body: unknown;
  contentType?: string;
  status: number;
  /** The write was applied but its reply was lost (see loseReplyNext). */
  lost?: 'reset' | 'hang';
}

/** One request of any kind (for assertions about pagination and watch restarts). */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  watch: boolean;
  /** The Authorization header as sent (the kubeconfig's credentials). */
  authorization?: string;
  userAgent?: string;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** A change as subscribe() reports it. */
export interface StoredEvent {
  type: EventType;
  kind: string;
  object: FakeObject;
}

interface HistoryEvent {
  rv: number;
  type: EventType;
  resource: ResourceType;
  namespace?: string;
  json: string;
}

interface Entry {
  json: string;
  rv: number;
}

interface Watcher {
  resource: ResourceType;
  namespace?: string;
  res: ServerResponse;
  bookmarks: boolean;
  /** Output held back while watches are silenced. */
  held: string[];
  timer?: NodeJS.Timeout;
}

interface ListSnapshot {
  rv: number;
  items: string[];
}

interface RequestRule {
  method?: string;
  /** Only watch requests (true), only non-watch requests (false), or both (undefined). */
  watch?: boolean;
  path: string | RegExp;
  remaining: number;
}

interface FailRule extends RequestRule {
  status: number;
}

interface LoseRule extends RequestRule {
  how: 'reset' | 'hang';
}

export interface FakeApiServerOptions {
  /** Interval between bookmarks on watches that asked for them. Default 100 ms. */
  bookmarkIntervalMs?: number;
  /** Events kept for watch replay; older ones are compacted away (410 Gone). Default 10,000. */
  historyLimit?: number;
  /** Serve HTTPS with this key and certificate (PEM) instead of plain HTTP. */
  tls?: { key: string; cert: string };
}

const status = (code: number, reason: string, message: string, details?: object) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: code < 400 ? 'Success' : 'Failure',
  message,
  reason,
  ...(details ? { details } : {}),
  code,
});

class HttpError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details?: object;
  constructor(code: number, reason: string, message: string, details?: object) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
}

const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

export class FakeApiServer {
  readonly #server: Server;
  readonly #tls: boolean;
  readonly #sockets = new Set<Socket>();
  readonly #objects = new Map<ResourceType, Map<string, Entry>>(TYPES.map((t) => [t, new Map()]));
  readonly #history: HistoryEvent[] = [];
  readonly #watchers = new Set<Watcher>();
  readonly #lists = new Map<string, ListSnapshot>();
  readonly #fail: FailRule[] = [];
  readonly #lose: LoseRule[] = [];
  /** Responses held open by a 'hang' rule, ended at stop(). */
  readonly #hung = new Set<ServerResponse>();
  readonly #holds = new Set<{ match: (r: RecordedRequest) => boolean; released: Promise<void> }>();
  readonly #conflicts = new Map<string, number>();
  readonly #bookmarkIntervalMs: number;
  readonly #historyLimit: number;
  #rv = 1000;
  /** Watches from a resourceVersion below this get 410 Gone. */
  #compactedRv = 1000;
  #delayMs = 0;
  readonly #delays = new Set<NodeJS.Timeout>();
  #silent = false;
  #listSeq = 0;
  /** Every write request, in order. */
  readonly writes: RecordedWrite[] = [];
  /** Every request, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Called after every write request is answered: a test makes another writer act at that moment. */
  onWrite: ((write: RecordedWrite) => void) | undefined;
  readonly #listeners = new Set<(event: StoredEvent) => void>();
  url = '';

  constructor(options: FakeApiServerOptions = {}) {
    this.#bookmarkIntervalMs = options.bookmarkIntervalMs ?? 100;
    this.#historyLimit = options.historyLimit ?? 10_000;
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.#send(res, 500, status(500, 'InternalError', String(err)));
        else res.destroy();
      });
    };
    this.#tls = !!options.tls;
    this.#server = options.tls ? createTlsServer(options.tls, handler) : createServer(handler);
    this.#server.on(options.tls ? 'secureConnection' : 'connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const { port } = this.#server.address() as AddressInfo;
    this.url = `${this.#tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    // Requests still held by delay() or hold() are dropped with their sockets.
    for (const timer of this.#delays) clearTimeout(timer);
    this.#delays.clear();
    this.#holds.clear();
    for (const res of this.#hung) res.destroy();
    this.#hung.clear();
    for (const w of this.#watchers) this.#closeWatcher(w, true);
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  // ---- state, without HTTP (seeding and assertions) ----

  /** The current global resourceVersion. */
  get resourceVersion(): number {
    return this.#rv;
  }

  /** Number of open watch streams. */
  get watchCount(): number {
    return this.#watchers.size;
  }

  /** Creates (or replaces) objects without recording writes; emits watch events like any change. */
  add(...objects: FakeObject[]): void {
    for (const obj of objects) this.#put(this.#typeOf(obj), obj, true);
  }

  /** Loads many objects at once as the initial state: no history events (like a fresh etcd), one rv each. */
  load(objects: Iterable<FakeObject>): void {
    for (const obj of objects) {
      const type = this.#typeOf(obj);
      const rv = ++this.#rv;
      const meta = obj.metadata;
      const full = {
        apiVersion: type.apiVersion,
        kind: type.kind,
        ...obj,
        metadata: { uid: randomUUID(), creationTimestamp: now(), ...meta, resourceVersion: String(rv) },
      };
      this.#objects.get(type)!.set(this.#key(type, meta.name, meta.namespace), { json: JSON.stringify(full), rv });
    }
    this.#compactedRv = this.#rv;
  }

  /** Updates an object (as a controller would); returns the stored version. */
  update(obj: FakeObject): FakeObject {
    return this.#put(this.#typeOf(obj), obj, false);
  }

  /** Deletes an object; emits DELETED. */
  remove(kind: string, name: string, namespace?: string): void {
    const type = BY_KIND.get(kind);
    if (!type) throw new Error(`fake apiserver: unknown kind ${kind}`);
    this.#delete(type, name, namespace);
  }

  get(kind: string, name: string, namespace?: string): FakeObject | undefined {
    const type = BY_KIND.get(kind);
    if (!type) throw new Error(`fake apiserver: unknown kind ${kind}`);
    const entry = this.#objects.get(type)!.get(this.#key(type, name, namespace));
    return entry ? (JSON.parse(entry.json) as FakeObject) : undefined;
  }

  list(kind: string): FakeObject[] {
    const type = BY_KIND.get(kind);
    if (!type) throw new Error(`fake apiserver: unknown kind ${kind}`);
    return [...this.#objects.get(type)!.values()].map((e) => JSON.parse(e.json) as FakeObject);
  }

  // ---- fault hooks ----

  /** Drops every open watch stream (the sockets are destroyed, as a network failure would). */
  dropWatches(): void {
    for (const w of [...this.#watchers]) this.#closeWatcher(w, true);
  }

  /** Ends every open watch stream cleanly, as the server does when timeoutSeconds expires. */
  endWatches(): void {
    for (const w of [...this.#watchers]) this.#closeWatcher(w, false);
  }

  /** Forgets the event history: watches from any older resourceVersion get 410 Gone, continue tokens expire. */
  compact(): void {
    this.#history.length = 0;
    this.#compactedRv = this.#rv;
    this.#lists.clear();
  }

  /**
   * Answers the next `count` requests matching `path` (substring or RegExp of the path) with `code` (default 500);
   * `method` narrows to one HTTP method, `watch` to watch requests (true) or everything else (false).
   */
  failNext(path: string | RegExp, count = 1, code = 500, method?: string, watch?: boolean): void {
    this.#fail.push({ path, remaining: count, status: code, method, watch });
  }

  /**
   * Applies the next `count` write requests matching `path` (and `method`), then loses their reply: 'reset' closes
   * the connection unanswered, 'hang' never answers (the client times out). The write is recorded with `lost`. It
   * goes before failNext rules: `loseReplyNext(p); failNext(p, 3)` loses the first reply and fails the next three.
   */
  loseReplyNext(path: string | RegExp, count = 1, method?: string, how: 'reset' | 'hang' = 'reset'): void {
    this.#lose.push({ path, remaining: count, method, how });
  }

  /** Forgets every pending failNext and loseReplyNext rule. */
  clearFailures(): void {
    this.#fail.length = 0;
    this.#lose.length = 0;
  }

  /**
   * Holds every request that `match` selects (e.g. one client's lists, by its User-Agent) until the returned release
   * is called: a test decides when the client gets its answer, by state rather than by time.
   */
  hold(match: (request: RecordedRequest) => boolean): () => void {
    let release!: () => void;
    const hold = { match, released: new Promise<void>((resolve) => (release = resolve)) };
    this.#holds.add(hold);
    return () => {
      this.#holds.delete(hold);
      release();
    };
  }

  /** Delays every response by `ms` (0 turns it off). */
  delay(ms: number): void {
    this.#delayMs = ms;
  }

  /** The next `count` PATCH requests to exactly this path get 409 Conflict whatever their resourceVersion. */
  conflictNextPatch(path: string, count = 1): void {
    this.#conflicts.set(path, (this.#conflicts.get(path) ?? 0) + count);
  }

  /** Silenced watches deliver nothing, not even bookmarks; events are held and flushed when un-silenced. */
  silenceWatches(silent: boolean): void {
    this.#silent = silent;
    if (!silent) {
      for (const w of this.#watchers) {
        const held = w.held.splice(0);
        if (held.length > 0) w.res.write(held.join(''));
      }
    }
  }

  // ---- internals ----

  #typeOf(obj: FakeObject): ResourceType {
    const type = obj.kind ? BY_KIND.get(obj.apiVersion ? `${obj.apiVersion}/${obj.kind}` : obj.kind) : undefined;
    if (!type) throw new Error(`fake apiserver: object without a known kind: ${JSON.stringify(obj).slice(0, 120)}`);
    return type;
  }

  #key(type: ResourceType, name: string, namespace?: string): string {
    return type.namespaced ? `${namespace ?? 'default'}/${name}` : name;
  }

  /** Stores an object with a new resourceVersion and emits ADDED or MODIFIED. */
  #put(type: ResourceType, obj: FakeObject, allowCreate: boolean): FakeObject {
    const meta = obj.metadata;
    const namespace = type.namespaced ? (meta.namespace ?? 'default') : undefined;
    const key = this.#key(type, meta.name, namespace);
    const map = this.#objects.get(type)!;
    const old = map.get(key);
    if (!old && !allowCreate) throw new HttpError(404, 'NotFound', `${type.plural} "${meta.name}" not found`);
    const oldMeta = old ? (JSON.parse(old.json) as FakeObject).metadata : undefined;
    const rv = ++this.#rv;
    // The API server labels every namespace with its name (what a namespaceSelector can always match).
    const labels =
      type.kind === 'Namespace'
        ? {
            labels: {
              ...(meta.labels as Record<string, string> | undefined),
              'kubernetes.io/metadata.name': meta.name,
            },
          }
        : {};
    const full: FakeObject = {
      ...obj,
      apiVersion: type.apiVersion,
      kind: type.kind,
      metadata: {
        ...meta,
        ...labels,
        ...(namespace ? { namespace } : {}),
        uid: oldMeta?.uid ?? meta.uid ?? randomUUID(),
        creationTimestamp: oldMeta?.creationTimestamp ?? meta.creationTimestamp ?? now(),
        resourceVersion: String(rv),
      },
    };
    const json = JSON.stringify(full);
    map.set(key, { json, rv });
    this.#emit({ rv, type: old ? 'MODIFIED' : 'ADDED', resource: type, namespace, json });
    return full;
  }

  #delete(type: ResourceType, name: string, namespace?: string): FakeObject {
    const ns = type.namespaced ? (namespace ?? 'default') : undefined;
    const map = this.#objects.get(type)!;
    const key = this.#key(type, name, ns);
    const old = map.get(key);
    if (!old) throw new HttpError(404, 'NotFound', `${type.plural} "${name}" not found`, { name, kind: type.plural });
    map.delete(key);
    const rv = ++this.#rv;
    const obj = JSON.parse(old.json) as FakeObject;
    obj.metadata.resourceVersion = String(rv);
    const json = JSON.stringify(obj);
    this.#emit({ rv, type: 'DELETED', resource: type, namespace: ns, json });
    return obj;
  }

  /**
   * Calls `listener` after every change, whoever made it (an HTTP client or a test), as a watch of every kind would
   * see it: a test's stand-in controller reacts to the state, not to one client's requests. Returns the unsubscribe
   * function.
   */
  subscribe(listener: (event: StoredEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(event: HistoryEvent): void {
    if (this.#listeners.size > 0) {
      const stored: StoredEvent = { type: event.type, kind: event.resource.kind, object: JSON.parse(event.json) };
      // After the current write has returned, as a controller's informer would see it.
      queueMicrotask(() => {
        for (const listener of this.#listeners) listener(stored);
      });
    }
    this.#history.push(event);
    if (this.#history.length > this.#historyLimit) {
      const dropped = this.#history.splice(0, this.#history.length - this.#historyLimit);
      this.#compactedRv = dropped[dropped.length - 1].rv;
    }
    for (const w of this.#watchers) {
      if (w.resource === event.resource && (!w.namespace || w.namespace === event.namespace)) {
        this.#write(w, eventLine(event));
      }
    }
  }

  #write(w: Watcher, line: string): void {
    if (this.#silent) w.held.push(line);
    else w.res.write(line);
  }

  #closeWatcher(w: Watcher, destroy: boolean): void {
    this.#watchers.delete(w);
    clearInterval(w.timer);
    if (destroy) w.res.destroy();
    else w.res.end();
  }

  #send(res: ServerResponse, code: number, body: unknown): void {
    const text = body instanceof RawList ? body.text : JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  async #body(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    if (!raw) return undefined;
    try {
      return JSON.parse(raw);
    } catch {
      throw new HttpError(400, 'BadRequest', 'request body is not JSON');
    }
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const method = req.method ?? 'GET';
    const query = Object.fromEntries(url.searchParams);
    const watch = query.watch === 'true' || query.watch === '1';
    const { authorization, 'user-agent': userAgent } = req.headers;
    const request = { method, path: url.pathname, query, watch, authorization, userAgent };
    this.requests.push(request);
    for (const hold of this.#holds) if (hold.match(request)) await hold.released;
    if (method === 'GET' && url.pathname === '/version') {
      this.#send(res, 200, { major: '1', minor: '35', gitVersion: 'v1.35.0-fake', platform: 'linux/amd64' });
      return;
    }
    const isWrite = method !== 'GET';
    let body: unknown;
    try {
      if (isWrite) body = await this.#body(req);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      this.#send(res, err.code, status(err.code, err.reason, err.message));
      return;
    }
    const record = (code: number, lost?: LoseRule['how']) => {
      if (!isWrite) return;
      const write: RecordedWrite = {
        method,
        path: url.pathname,
        body,
        contentType: req.headers['content-type'],
        status: code,
        ...(lost ? { lost } : {}),
      };
      this.writes.push(write);
      if (lost) this.onWrite?.(write);
      else if (this.onWrite) res.once('finish', () => this.onWrite?.(write));
    };
    if (this.#delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#delays.delete(timer);
          resolve();
        }, this.#delayMs);
        this.#delays.add(timer);
      });
    }

    const matches = (r: RequestRule) =>
      r.remaining > 0 &&
      (!r.method || r.method === method) &&
      (r.watch === undefined || r.watch === watch) &&
      (typeof r.path === 'string' ? url.pathname.includes(r.path) : r.path.test(url.pathname));
    // A write to lose is applied first: its rule goes before any failNext rule for the same request.
    const lose = isWrite ? this.#lose.find(matches) : undefined;
    const rule = lose ? undefined : this.#fail.find(matches);
    if (rule) {
      rule.remaining--;
      record(rule.status);
      this.#send(res, rule.status, status(rule.status, 'InternalError', 'injected failure'));
      return;
    }

    try {
      const route = this.#route(url.pathname);
      const unserved = UNSERVED.find((option) => option in query);
      if (unserved) throw new HttpError(400, 'BadRequest', `the fake API server does not serve ${unserved}`);
      if (watch) {
        if (method !== 'GET' || route.name)
          throw new HttpError(405, 'MethodNotAllowed', 'watch needs a collection GET');
        this.#watch(route, query, res);
        return;
      }
      const result = this.#dispatch(method, url.pathname, route, query, body, req.headers['content-type']);
      if (lose && result.code < 300) {
        lose.remaining--;
        record(result.code, lose.how);
        if (lose.how === 'reset') res.socket?.destroy();
        else {
          this.#hung.add(res);
          res.once('close', () => this.#hung.delete(res));
        }
        return;
      }
      record(result.code);
      this.#send(res, result.code, result.body);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      record(err.code);
      this.#send(res, err.code, status(err.code, err.reason, err.message, err.details));
    }
  }

  #route(path: string): { type: ResourceType; namespace?: string; name?: string; sub?: string } {
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    let rest: string[];
    let gv: string;
    if (parts[0] === 'api' && parts.length >= 2) {
      gv = parts[1];
      rest = parts.slice(2);
    } else if (parts[0] === 'apis' && parts.length >= 3) {
      gv = `${parts[1]}/${parts[2]}`;
      rest = parts.slice(3);
    } else {
      throw new HttpError(404, 'NotFound', `the server could not find the requested resource (${path})`);
    }
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const type = BY_PATH.get(`${gv}/${rest[0]}`);
    if (!type || rest.length > 3 || (namespace && !type.namespaced)) {
      throw new HttpError(404, 'NotFound', `the server could not find the requested resource (${path})`);
    }
    return { type, namespace, name: rest[1], sub: rest[2] };
  }

  #dispatch(
    method: string,
    path: string,
    route: { type: ResourceType; namespace?: string; name?: string; sub?: string },
    query: Record<string, string>,
    body: unknown,
    contentType: string | undefined,
  ): { code: number; body: unknown } {
    const { type, namespace, name, sub } = route;
    if (!name) {
      if (method === 'GET') return { code: 200, body: this.#list(type, namespace, query) };
      throw new HttpError(405, 'MethodNotAllowed', `${method} is not supported on ${path}`);
    }
    if (sub === 'binding' && type.kind === 'Pod') {
      if (method !== 'POST') throw new HttpError(405, 'MethodNotAllowed', `${method} is not supported on ${path}`);
      return this.#bind(name, namespace, body);
    }
    if (sub) throw new HttpError(404, 'NotFound', `the server could not find the requested resource (${path})`);
    const entry = this.#objects.get(type)!.get(this.#key(type, name, namespace));
    if (!entry) throw new HttpError(404, 'NotFound', `${type.plural} "${name}" not found`, { name, kind: type.plural });
    const current = JSON.parse(entry.json) as FakeObject;
    if (method === 'GET') return { code: 200, body: current };
    if (method !== 'PATCH') throw new HttpError(405, 'MethodNotAllowed', `${method} is not supported on ${path}`);
    const media = (contentType ?? '').split(';')[0].trim();
    if (media !== 'application/merge-patch+json') {
      throw new HttpError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - this fake accepts only application/merge-patch+json (got ${media || 'none'})`,
      );
    }
    const next = mergePatch(current, body) as FakeObject;
    const forced = this.#conflicts.get(path) ?? 0;
    const wantRv = next.metadata.resourceVersion;
    if (forced > 0 || (wantRv !== undefined && wantRv !== '' && wantRv !== current.metadata.resourceVersion)) {
      if (forced > 0) this.#conflicts.set(path, forced - 1);
      throw new HttpError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${type.plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name, kind: type.plural },
      );
    }
    if (next.metadata.uid && next.metadata.uid !== current.metadata.uid) {
      throw new HttpError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${next.metadata.uid}, UID in object meta: ${current.metadata.uid}`,
        { name, kind: type.plural },
      );
    }
    return { code: 200, body: this.#put(type, { ...next, metadata: { ...next.metadata, namespace } }, false) };
  }

  #bind(name: string, namespace: string | undefined, body: unknown): { code: number; body: unknown } {
    const binding = body as { metadata?: { name?: string; uid?: string }; target?: { kind?: string; name?: string } };
    const type = BY_KIND.get('Pod')!;
    const entry = this.#objects.get(type)!.get(this.#key(type, name, namespace));
    if (!entry) throw new HttpError(404, 'NotFound', `pods "${name}" not found`, { name, kind: 'pods' });
    if (binding?.metadata?.name && binding.metadata.name !== name) {
      throw new HttpError(
        400,
        'BadRequest',
        `the name of the object (${binding.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    if (!binding?.target?.name) throw new HttpError(422, 'Invalid', 'target.name: Required value');
    const pod = JSON.parse(entry.json) as FakeObject & { spec?: { nodeName?: string } };
    if (binding.metadata?.uid && binding.metadata.uid !== pod.metadata.uid) {
      throw new HttpError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on pods/binding "${name}": StorageError: invalid object, Code: 4, Key: /registry/pods/${namespace}/${name}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ${binding.metadata.uid}, UID in object meta: ${pod.metadata.uid}`,
        { name, kind: 'pods/binding' },
      );
    }
    if (pod.spec?.nodeName) {
      throw new HttpError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on pods/binding "${name}": pod ${name} is already assigned to node "${pod.spec.nodeName}"`,
        { name, kind: 'pods/binding' },
      );
    }
    this.#put(type, { ...pod, spec: { ...pod.spec, nodeName: binding.target.name } }, false);
    return { code: 201, body: status(201, '', '') };
  }

  #list(type: ResourceType, namespace: string | undefined, query: Record<string, string>): unknown {
    const limit = Number(query.limit ?? 0);
    let snap: ListSnapshot;
    let offset = 0;
    let id: string;
    if (query.continue) {
      const [tokenId, off] = Buffer.from(query.continue, 'base64url').toString('utf8').split(':');
      const found = this.#lists.get(tokenId);
      if (!found) {
        throw new HttpError(
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      }
      snap = found;
      id = tokenId;
      offset = Number(off);
    } else {
      const entries = [...this.#objects.get(type)!.entries()]
        .filter(([key]) => !namespace || key.startsWith(`${namespace}/`))
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      snap = { rv: this.#rv, items: entries.map(([, e]) => e.json) };
      id = String(++this.#listSeq);
    }
    const end = limit > 0 ? Math.min(offset + limit, snap.items.length) : snap.items.length;
    const page = snap.items.slice(offset, end);
    const more = end < snap.items.length;
    if (more) this.#lists.set(id, snap);
    else this.#lists.delete(id);
    const metadata: Record<string, unknown> = { resourceVersion: String(snap.rv) };
    if (more) {
      metadata.continue = Buffer.from(`${id}:${end}`).toString('base64url');
      metadata.remainingItemCount = snap.items.length - end;
    }
    // Items are kept as JSON text; splice them in rather than parse and re-serialise 150,000 pods.
    return new RawList(
      `{"kind":"${type.kind}List","apiVersion":"${type.apiVersion}","metadata":${JSON.stringify(metadata)},"items":[${page.join(',')}]}`,
    );
  }

  #watch(route: { type: ResourceType; namespace?: string }, query: Record<string, string>, res: ServerResponse): void {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders(); // the real server answers at once, before any event
    const w: Watcher = {
      resource: route.type,
      namespace: route.namespace,
      res,
      bookmarks: query.allowWatchBookmarks === 'true',
      held: [],
    };
    const rvParam = query.resourceVersion ?? '';
    if (rvParam === '' || rvParam === '0') {
      // The current state as synthetic ADDED events, then changes.
      for (const [key, e] of this.#objects.get(route.type)!) {
        if (!route.namespace || key.startsWith(`${route.namespace}/`)) {
          this.#write(w, `{"type":"ADDED","object":${e.json}}\n`);
        }
      }
    } else {
      const from = Number(rvParam);
      if (!Number.isFinite(from) || from < this.#compactedRv) {
        res.end(
          `${JSON.stringify({
            type: 'ERROR',
            object: status(410, 'Expired', `too old resource version: ${rvParam} (${this.#compactedRv})`),
          })}\n`,
        );
        return;
      }
      for (const e of this.#history) {
        if (e.rv > from && e.resource === route.type && (!route.namespace || e.namespace === route.namespace)) {
          this.#write(w, eventLine(e));
        }
      }
    }
    this.#watchers.add(w);
    if (w.bookmarks) {
      w.timer = setInterval(() => {
        if (this.#silent) return;
        const bookmark = {
          type: 'BOOKMARK',
          object: {
            kind: route.type.kind,
            apiVersion: route.type.apiVersion,
            metadata: { resourceVersion: String(this.#rv) },
          },
        };
        res.write(`${JSON.stringify(bookmark)}\n`);
      }, this.#bookmarkIntervalMs);
    }
    const timeout = Number(query.timeoutSeconds ?? 0);
    let timeoutTimer: NodeJS.Timeout | undefined;
    if (timeout > 0) timeoutTimer = setTimeout(() => this.#closeWatcher(w, false), timeout * 1000);
    res.on('close', () => {
      clearTimeout(timeoutTimer);
      this.#watchers.delete(w);
      clearInterval(w.timer);
    });
  }
}

const eventLine = (event: HistoryEvent): string => `{"type":"${event.type}","object":${event.json}}\n`;

/**
 * The list and watch options the extender's client never sends, refused rather than ignored: a client that started
 * sending one would otherwise get an answer kube-apiserver would not give.
 */
const UNSERVED = ['fieldSelector', 'labelSelector', 'sendInitialEvents', 'resourceVersionMatch'];

/** JSON merge patch (RFC 7386), the only patch the extender sends. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** A list body that is already JSON text. */
class RawList {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toJSON(): never {
    throw new Error('RawList is sent as text');
  }
}

/**
 * Writes a kubeconfig for the fake server into a fresh temp dir; returns the file path. With `caPem` the server's
 * certificate is verified against it; without, TLS verification is skipped (client-node refuses plain http otherwise).
 */
export async function writeKubeconfig(url: string, dir?: string, caPem?: string): Promise<string> {
  const target = dir ?? (await tempDir('fake-kube-'));
  const file = join(target, 'kubeconfig');
  const trust = caPem
    ? `    certificate-authority-data: ${Buffer.from(caPem).toString('base64')}`
    : '    insecure-skip-tls-verify: true';
  const text = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: fake',
    '  cluster:',
    `    server: ${url}`,
    trust,
    'users:',
    '- name: fake',
    '  user:',
    '    token: fake-token',
    'contexts:',
    '- name: fake',
    '  context:',
    '    cluster: fake',
    '    user: fake',
    '    namespace: default',
    'current-context: fake',
    '',
  ].join('\n');
  await writeFile(file, text);
  return file;
}
