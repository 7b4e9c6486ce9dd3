// Swagger UI in a real browser: starts `serve` on the example cluster (what `npm start` serves) on a free port, opens
// /docs in headless Chromium through its DevTools protocol (Node's own WebSocket, no dependency), and on each
// operation checked clicks "Try it out", picks the named example, clicks "Execute" and reads the status Swagger UI
// shows. Fails unless each verb, explain and simulate answer their named example with 200 and explain and simulate
// document their 404. Two screenshots per operation go to --out (what was sent and answered; the statuses it
// documents); look at them. Not part of `npm test`: Chromium is not a project dependency.
//
// Run: ./node_modules/.bin/node scripts/browser-check.ts [--chromium /usr/bin/chromium] [--out /tmp/browser-check]
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    chromium: { type: 'string', default: '/usr/bin/chromium' },
    out: { type: 'string', default: join(tmpdir(), 'browser-check') },
  },
});
const root = fileURLToPath(new URL('..', import.meta.url));
const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** The first line of `stream` that `pattern` matches (its first group), or an error naming `what` at its end. */
async function firstMatch(stream: NodeJS.ReadableStream, pattern: RegExp, what: string): Promise<string> {
  for await (const line of createInterface({ input: stream })) {
    const m = pattern.exec(line);
    if (m) return m[1];
  }
  throw new Error(`${what} ended before printing ${pattern}`);
}

async function startServer(): Promise<string> {
  const child = spawn(
    process.execPath,
    ['src/main.ts', 'serve', '--cluster-state', 'examples/cluster.yaml', '--port', '0', '--log-format', 'json'],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  const url = await firstMatch(child.stdout, /"address":"(http:\/\/127\.0\.0\.1:\d+)"/, 'the extender');
  child.stdout.resume();
  return url;
}

async function startChromium(profile: string): Promise<string> {
  const child = spawn(
    args.chromium,
    ['--headless', '--no-sandbox', '--disable-gpu', '--remote-debugging-port=0', `--user-data-dir=${profile}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  children.push(child);
  const ws = await firstMatch(child.stderr, /DevTools listening on (ws:\/\/\S+)/, 'chromium');
  child.stderr.resume();
  return ws;
}

/** One DevTools session on a page: send() a command, waitFor() an event. */
class Page {
  private next = 1;
  private readonly pending = new Map<number, (m: { result?: unknown; error?: unknown }) => void>();
  private readonly waiters: { method: string; resolve: (params: unknown) => void }[] = [];
  private readonly socket: WebSocket;
  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.addEventListener('message', (e) => {
      const m = JSON.parse(String(e.data));
      if (m.id) this.pending.get(m.id)?.(m);
      for (const w of this.waiters.filter((x) => x.method === m.method)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(m.params);
      }
    });
  }

  static async open(browserWs: string): Promise<Page> {
    const http = browserWs.replace(/^ws:\/\/([^/]+).*/, 'http://$1');
    const target = (await (await fetch(`${http}/json/new?about:blank`, { method: 'PUT' })).json()) as {
      webSocketDebuggerUrl: string;
    };
    const socket = new WebSocket(target.webSocketDebuggerUrl);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', reject, { once: true });
    });
    return new Page(socket);
  }

  send<T = unknown>(method: string, params: object = {}): Promise<T> {
    const id = this.next++;
    this.socket.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) =>
      this.pending.set(id, (m) => {
        this.pending.delete(id);
        if (m.error) reject(new Error(`${method}: ${JSON.stringify(m.error)}`));
        else resolve(m.result as T);
      }),
    );
  }

  waitFor(method: string): Promise<unknown> {
    return new Promise((resolve) => this.waiters.push({ method, resolve }));
  }

  /** Evaluates `expression` in the page (awaiting a promise) and returns its value. */
  async eval<T>(expression: string): Promise<T> {
    const r = await this.send<{ result: { value: T }; exceptionDetails?: { exception?: { description?: string } } }>(
      'Runtime.evaluate',
      { expression, awaitPromise: true, returnByValue: true },
    );
    if (r.exceptionDetails) throw new Error(r.exceptionDetails.exception?.description ?? JSON.stringify(r));
    return r.result.value;
  }

  close(): void {
    this.socket.close();
  }
}

// Runs in the page: finds an operation's elements afresh each time (Swagger UI re-renders them).
const IN_PAGE = `
window.op = (method, path) => [...document.querySelectorAll('.opblock')].find((o) =>
  o.querySelector('.opblock-summary-method')?.textContent.trim().toLowerCase() === method &&
  o.querySelector('.opblock-summary-path')?.getAttribute('data-path') === path);
window.centre = (method, path, selector) => {
  const el = op(method, path)?.querySelector(selector);
  if (!el) return null;
  el.scrollIntoView({ block: 'center' });
  const r = el.getBoundingClientRect();
  return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
};
window.pickExample = (method, path, example) => {
  const select = op(method, path).querySelector('.opblock-section-request-body .examples-select select');
  const examples = select ? [...select.options].map((o) => o.value) : [];
  if (select && select.value !== example) {
    if (!examples.includes(example)) throw new Error(path + ': no example ' + example + ' among ' + examples);
    Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value').set.call(select, example);
    select.dispatchEvent(new Event('change', { bubbles: true }));
  }
  return examples;
};
window.outcome = (method, path) => {
  const o = op(method, path);
  const status = o.querySelector('.live-responses-table .response .response-col_status')?.textContent.trim();
  if (!status) return null;
  return { status, body: o.querySelector('textarea.body-param__text')?.value ?? '',
    curl: o.querySelector('.curl-command')?.textContent ?? '',
    documented: [...o.querySelectorAll('.responses-table:not(.live-responses-table) tr.response')]
      .map((r) => r.getAttribute('data-code')),
    response: o.querySelector('.live-responses-table .response-col_description pre')?.textContent ?? '' };
};
`;

type Outcome = { status: string; body: string; curl: string; documented: string[]; response: string };

/** Polls `expression` in the page until it is truthy. */
async function until<T>(page: Page, what: string, expression: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await page.eval<T>(expression);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A real mouse click (press and release) on the centre of `selector` within the operation. */
async function click(page: Page, method: string, path: string, selector: string, what: string): Promise<void> {
  const at = await until<{ x: number; y: number }>(
    page,
    `${what} of ${path}`,
    `centre(${JSON.stringify(method)}, ${JSON.stringify(path)}, ${JSON.stringify(selector)})`,
  );
  for (const type of ['mousePressed', 'mouseReleased']) {
    await page.send('Input.dispatchMouseEvent', { type, ...at, button: 'left', clickCount: 1 });
  }
}

async function tryItOut(page: Page, method: string, path: string, example: string) {
  const q = `${JSON.stringify(method)}, ${JSON.stringify(path)}`;
  await until(page, path, `!!op(${q})`);
  if (!(await page.eval<boolean>(`op(${q}).classList.contains('is-open')`))) {
    await click(page, method, path, '.opblock-summary-control', 'the summary');
  }
  await click(page, method, path, '.try-out__btn', '"Try it out"');
  await until(page, `"Execute" of ${path}`, `!!op(${q}).querySelector('.execute')`);
  const examples = await page.eval<string[]>(`pickExample(${q}, ${JSON.stringify(example)})`);
  await click(page, method, path, '.execute', '"Execute"');
  return { examples, ...(await until<Outcome>(page, `the response of ${path}`, `outcome(${q})`)) };
}

/** A PNG of the operation from the top of `from` to the bottom of `to` (selectors within it). */
async function screenshot(page: Page, file: string, method: string, path: string, from: string, to: string) {
  const box = await page.eval<{ x: number; y: number; width: number; height: number }>(`(() => {
    const o = op(${JSON.stringify(method)}, ${JSON.stringify(path)});
    const top = o.querySelector(${JSON.stringify(from)}).getBoundingClientRect();
    const bottom = o.querySelector(${JSON.stringify(to)}).getBoundingClientRect();
    const r = o.getBoundingClientRect();
    return { x: r.left + scrollX, y: top.top + scrollY, width: r.width, height: bottom.bottom - top.top };
  })()`);
  const { data } = await page.send<{ data: string }>('Page.captureScreenshot', {
    format: 'png',
    captureBeyondViewport: true,
    clip: { ...box, scale: 1 },
  });
  await writeFile(file, Buffer.from(data, 'base64'));
}

const checks = [
  { name: 'filter', method: 'post', path: '/scheduler/filter', example: 'db-0' },
  { name: 'explain', method: 'post', path: '/api/v1/explain', example: 'db-0 in zone b', mustDocument: ['404'] },
  { name: 'prioritize', method: 'post', path: '/scheduler/prioritize', example: 'db-0' },
  { name: 'preempt', method: 'post', path: '/scheduler/preempt', example: 'db-0 on node-c1' },
  { name: 'simulate', method: 'post', path: '/api/v1/simulate', example: 'StatefulSet web', mustDocument: ['404'] },
  // Last: it binds db-0, which the examples above read as pending.
  { name: 'bind', method: 'post', path: '/scheduler/bind', example: 'db-0 to node-a3' },
];

await mkdir(args.out, { recursive: true });
const profile = await mkdtemp(join(tmpdir(), 'browser-check-profile-'));
const failures: string[] = [];
try {
  const [base, browserWs] = await Promise.all([startServer(), startChromium(profile)]);
  const page = await Page.open(browserWs);
  await page.send('Page.enable');
  await page.send('Emulation.setDeviceMetricsOverride', {
    width: 1280,
    height: 1000,
    deviceScaleFactor: 1,
    mobile: false,
  });
  const loaded = page.waitFor('Page.loadEventFired');
  await page.send('Page.navigate', { url: `${base}/docs` });
  await loaded;
  await page.eval(IN_PAGE);
  await until(page, 'the operations', `document.querySelectorAll('.opblock').length`);
  const overview = join(args.out, '0-docs.png');
  const shot = await page.send<{ data: string }>('Page.captureScreenshot', { format: 'png' });
  await writeFile(overview, Buffer.from(shot.data, 'base64'));
  console.log(`${base}/docs: ${overview}`);
  for (const [i, c] of checks.entries()) {
    const r = await tryItOut(page, c.method, c.path, c.example);
    // What was sent and answered; then the statuses the operation documents.
    const file = join(args.out, `${i + 1}-${c.name}-executed.png`);
    await screenshot(page, file, c.method, c.path, '.opblock-summary', '.live-responses-table');
    const documentedFile = join(args.out, `${i + 1}-${c.name}-documented.png`);
    await screenshot(
      page,
      documentedFile,
      c.method,
      c.path,
      '.responses-table:not(.live-responses-table)',
      '.responses-table:not(.live-responses-table)',
    );
    console.log(
      `${c.method.toUpperCase()} ${c.path}: examples [${r.examples.join(', ')}]; ${r.curl.replace(/\s+/g, ' ').slice(0, 300)}\n` +
        `  answered ${r.status}: ${r.response.replace(/\s+/g, ' ').slice(0, 200)}\n  documented ${r.documented.join(' ')}; ${file}, ${documentedFile}`,
    );
    if (r.status !== '200') failures.push(`${c.path} answered ${r.status} in the browser`);
    if (/"Error": "[^"]/.test(r.response)) failures.push(`${c.path} answered an Error`);
    for (const code of c.mustDocument ?? []) {
      if (!r.documented.includes(code)) failures.push(`${c.path} does not document ${code}`);
    }
  }
  page.close();
} catch (err) {
  failures.push(String((err as Error).stack ?? err));
} finally {
  const running = children.filter((c) => c.exitCode === null);
  for (const c of running) c.kill('SIGTERM');
  await Promise.all(running.map((c) => once(c, 'exit')));
  await rm(profile, { recursive: true, force: true });
}
if (failures.length) {
  console.error(failures.join('\n'));
  process.exit(1);
}
console.log('ok: every operation checked answered 200 in Swagger UI');
process.exit(0);
