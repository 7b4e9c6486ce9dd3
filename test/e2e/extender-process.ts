// Runs the real CLI (`node src/main.ts serve --kubeconfig FILE --port 0`) as a child process with this Node binary,
// collects its JSON log lines and resolves with the address it logs as "listening".
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { dieWithTestProcess } from '../components/control-plane.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface ExtenderProcess {
  url: string;
  logs: LogLine[];
  child: ChildProcess;
  /** What the process wrote to stderr (a fatal error before the logger existed, a crash's stack). */
  stderr(): string;
  stop(): Promise<number | null>;
}

/**
 * `nodeArgs` go to Node itself (a bench's `--cpu-prof`), `extraArgs` to `serve`; `root` is the checkout whose
 * src/main.ts runs (a bench's baseline: another commit's worktree).
 */
export async function startExtender(
  kubeconfig: string,
  extraArgs: string[] = [],
  nodeArgs: string[] = [],
  root = ROOT,
): Promise<ExtenderProcess> {
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      'src/main.ts',
      'serve',
      '--kubeconfig',
      kubeconfig,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      ...extraArgs,
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '' } },
  );
  dieWithTestProcess(child);
  const logs: LogLine[] = [];
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const listening = new Promise<string>((resolve, reject) => {
    createInterface(child.stdout!).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as LogLine;
        logs.push(entry);
        if (entry.msg === 'listening') resolve(String(entry.address));
      } catch {
        logs.push({ level: 30, msg: line });
      }
    });
    child.once('exit', (code) => reject(new Error(`extender exited with ${code} before listening: ${stderr}`)));
  });
  const url = await listening;
  return {
    url,
    logs,
    child,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}

/**
 * Fails unless the extender exited 0 on SIGTERM, saying what it logged last: close-with-grace exits 1 on a timeout
 * or an error while closing, and the exit code alone never says which.
 */
export function assertExitedCleanly(extender: ExtenderProcess, code: number | null | undefined): void {
  if (code === 0) return;
  const tail = extender.logs.slice(-20).map((line) => JSON.stringify(line));
  assert.fail(
    `the extender exited with ${code} on SIGTERM, not 0\nstderr: ${extender.stderr() || '(empty)'}\n` +
      `last log lines:\n${tail.join('\n')}`,
  );
}

/** One HTTP call to the extender: the status and the body, parsed when it is JSON (else the text). */
export async function callExtender<T>(
  extender: Pick<ExtenderProcess, 'url'>,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${extender.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: (res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T,
  };
}
