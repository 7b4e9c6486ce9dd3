#!/usr/bin/env node
// The `topology-extender` command. The CLI is TypeScript run by Node's type stripping (Node >= 24). On an older
// machine `node`, run it on the Node 24 that `npm ci` pins under node_modules instead, passing the arguments, the
// signals and the exit status through, so the same command works on a laptop, in CI and in the container image.
// Plain JavaScript on purpose: this file must parse on the old Node too.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';

const main = new URL('../src/main.ts', import.meta.url);
const major = Number(process.versions.node.split('.')[0]);

// Started through a launcher that does not pass signals on (`npx` runs the command under `sh -c`, which dies on
// SIGTERM and leaves its child to init), the command would outlive it, still serving. So it stops as if sent SIGTERM
// once it is orphaned: its parent gone, it is handed to another process. Node has no parent-death signal to wait on.
const parent = process.ppid;
const orphaned = (stop) => {
  if (parent <= 1) return; // run by init itself (a container's entry point): nothing to outlive
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop();
  }, 1000).unref();
};

if (major >= 24) {
  orphaned(() => process.kill(process.pid, 'SIGTERM'));
  await import(main.href);
} else {
  const pinned = new URL('../node_modules/node/bin/node', import.meta.url);
  if (!existsSync(pinned)) {
    process.stderr.write(
      `topology-extender: needs Node.js 24 or later (this is ${process.version}); run \`npm ci\` in ${new URL('..', import.meta.url).pathname} to install the pinned one\n`,
    );
    process.exit(1);
  }
  const child = spawn(pinned.pathname, [main.pathname, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  orphaned(() => child.kill('SIGTERM'));
  child.on('exit', (code, signal) => process.exit(signal ? 128 + constants.signals[signal] : (code ?? 1)));
}
