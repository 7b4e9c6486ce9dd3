// A watch stream: one GET with watch=true, its answer split into lines of JSON watch events as they arrive. client-node's
// Watch does the same through fetch (a WHATWG stream adapted to a Node stream, then readline), which cost more CPU per
// event than decoding it; this reads undici's Node stream directly, on KubeClient's pool and authentication.
import type { KubeClient, RequestOptions } from './client.ts';

/** A watch answered with something else than 200; `statusCode` lets the caller tell 410 Gone from the rest. */
export class WatchRefused extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message: string) {
    super(message);
    this.name = 'WatchRefused';
    this.statusCode = statusCode;
  }
}

export interface WatchEvent {
  type: string;
  object: unknown;
}

export interface WatchOptions {
  query: RequestOptions['query'];
  /** Each event, with the length of its JSON line. */
  onEvent: (event: WatchEvent, chars: number) => void;
  /** Called once when the stream ends: null when the server closed it, else why (a TimeoutError when inactive). */
  onDone: (err: Error | null) => void;
  /** Ends a stream (or a request not yet answered) after this long without a byte. */
  inactivityMs: number;
}

/**
 * Opens a watch on `path`. Resolves with its controller once the API server has answered 200 (events then follow
 * through onEvent); a refused or failed request ends through onDone, and the promise resolves all the same.
 */
export async function watch(client: KubeClient, path: string, o: WatchOptions): Promise<AbortController> {
  const controller = new AbortController();
  let done = false;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, o.inactivityMs);
  timer.unref();
  const finish = (err: Error | null) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    controller.abort();
    o.onDone(timedOut ? new DOMException(`no data within ${o.inactivityMs} ms`, 'TimeoutError') : err);
  };
  try {
    const answer = await client.stream(path, { ...o.query, watch: true }, controller.signal);
    if (answer.statusCode !== 200) {
      const text = await answer.body.text().catch(() => '');
      const message = (() => {
        try {
          return (JSON.parse(text) as { message?: string }).message;
        } catch {
          return undefined;
        }
      })();
      throw new WatchRefused(answer.statusCode, message || text.slice(0, 200) || `HTTP ${answer.statusCode}`);
    }
    timer.refresh();
    const body = answer.body;
    body.setEncoding('utf8');
    let partial = '';
    body.on('data', (chunk: string) => {
      timer.refresh();
      let start = 0;
      for (let end = chunk.indexOf('\n'); end >= 0; end = chunk.indexOf('\n', start)) {
        const line = partial + chunk.slice(start, end);
        partial = '';
        start = end + 1;
        if (line.length === 0) continue;
        let event: WatchEvent;
        try {
          event = JSON.parse(line) as WatchEvent;
        } catch (err) {
          return finish(new Error(`watch event is not JSON: ${(err as Error).message}`));
        }
        o.onEvent(event, line.length);
        if (done) return;
      }
      partial += chunk.slice(start);
    });
    body.on('error', (err: Error) => finish(err));
    body.on('end', () => finish(null));
    body.on('close', () => finish(null));
  } catch (err) {
    finish(err as Error);
  }
  return controller;
}
