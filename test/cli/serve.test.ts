// The CLI as operators and tooling run it: `node src/main.ts serve ...` and `npm run serve -- ...`.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { tempDir } from '../helpers/temp-dir.ts';

interface Running {
  proc: ChildProcess;
  address: Promise<string>;
  /** What it printed so far. */
  stdout: () => string;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

const running: ChildProcess[] = [];
after(() => {
  for (const p of running) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    try {
      process.kill(p.spawnargs.includes('run') ? -p.pid! : p.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

function start(command: string, args: string[], detached = false, env: NodeJS.ProcessEnv = {}): Running {
  const proc = spawn(command, args, {
    detached,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TOPOLOGY_EXTENDER_LOG_LEVEL: 'info', ...env },
  });
  running.push(proc);
  let stdout = '';
  let stderr = '';
  let resolveAddress: (a: string) => void;
  const address = new Promise<string>((resolve) => {
    resolveAddress = resolve;
  });
  proc.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk;
    for (const line of stdout.split('\n')) {
      if (line.includes('"msg":"listening"')) resolveAddress(JSON.parse(line).address);
    }
  });
  proc.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  return { proc, address, exited, stdout: () => stdout };
}

const serve = (...args: string[]) => start(process.execPath, ['src/main.ts', 'serve', ...args]);

async function readyz(address: string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${address}/readyz`);
    if (res.status === 200) return 200;
    await new Promise((r) => setTimeout(r, 25));
  }
  return 503;
}

describe('serve', () => {
  it('serves a cluster-state file on the given host and port, is ready, and exits 0 on SIGTERM', async () => {
    const cli = serve('--cluster-state', 'examples/cluster.yaml', '--port', '0', '--host', '127.0.0.1');
    const address = await cli.address;
    assert.match(address, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(await readyz(address), 200);
    const res = await fetch(`${address}/scheduler/filter`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ Pod: { metadata: { name: 'x', uid: 'x' } }, Nodes: null, NodeNames: ['node-a1'] }),
    });
    assert.deepEqual(((await res.json()) as { NodeNames: string[] }).NodeNames, ['node-a1']);
    cli.proc.kill('SIGTERM');
    const { code, stdout } = await cli.exited;
    assert.equal(code, 0);
    assert.match(stdout, /"msg":"shutting down"/);
  });

  it('with --health-port, serves the probes and metrics on a second listener and no verb there', async () => {
    const cli = serve('--cluster-state', 'examples/cluster.yaml', '--port', '0', '--health-port', '0');
    const address = await cli.address;
    const health = await new Promise<string>((resolve) => {
      const look = () => {
        const line = cli
          .stdout()
          .split('\n')
          .find((l) => l.includes('"msg":"health and metrics listening"'));
        if (line) resolve(JSON.parse(line).address);
        else cli.proc.stdout!.once('data', look);
      };
      look();
    });
    const port = new URL(health).port;
    assert.notEqual(port, new URL(address).port);
    const at = `http://127.0.0.1:${port}`;
    assert.equal(await readyz(at), 200);
    assert.equal((await fetch(`${at}/healthz`)).status, 200);
    assert.match(await (await fetch(`${at}/metrics`)).text(), /^topology_extender_verb_queue_depth /m);
    const verb = await fetch(`${at}/scheduler/filter`, { method: 'POST', body: '{}' });
    assert.equal(verb.status, 404);
    assert.equal((await fetch(`${at}/api/v1/nodes`)).status, 404);
    cli.proc.kill('SIGTERM');
    assert.equal((await cli.exited).code, 0);
  });

  it('exits 1 naming --health-port when that port is in use', async () => {
    const first = serve('--cluster-state', 'examples/cluster.yaml', '--port', '0');
    const taken = new URL(await first.address).port;
    const { code, stderr } = await serve(
      '--cluster-state',
      'examples/cluster.yaml',
      '--port',
      '0',
      '--health-host',
      '127.0.0.1',
      '--health-port',
      taken,
    ).exited;
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${taken}: .*--health-port`));
    first.proc.kill('SIGTERM');
    await first.exited;
  });

  it('--no-simulate-volume-controller serves the file as written: a pre-bound claim stays unbound', async () => {
    const dir = await tempDir('serve-frozen-');
    const file = join(dir, 'cluster.yaml');
    const claim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'local',
        volumeName: 'pv-1',
        resources: { requests: { storage: '1Gi' } },
      },
    };
    const pv = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv-1' },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'local',
        local: { path: '/x' },
      },
      status: { phase: 'Available' },
    };
    await writeFile(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [claim, pv] }));
    const phases: Record<string, string> = {};
    for (const frozen of [true, false]) {
      const cli = serve('--cluster-state', file, '--port', '0', ...(frozen ? ['--no-simulate-volume-controller'] : []));
      const address = await cli.address;
      assert.equal(await readyz(address), 200);
      // The simulated controller completes the binding a few event-loop turns after loading: poll (bounded) for it.
      const phase = async () =>
        ((await (await fetch(`${address}/api/v1/persistentvolumeclaims/default/data`)).json()) as { phase: string })
          .phase;
      let view = { phase: await phase() };
      for (let i = 0; i < 100 && view.phase !== 'Bound'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        view = { phase: await phase() };
      }
      phases[frozen ? 'frozen' : 'simulated'] = view.phase;
      cli.proc.kill('SIGTERM');
      await cli.exited;
    }
    assert.deepEqual(phases, { frozen: 'Pending', simulated: 'Bound' });
  });

  it('runs in the exact form `npm run serve -- --cluster-state FILE --port N --host H`, and stops with npm on SIGTERM', async () => {
    const npm = process.env.npm_execpath;
    const args = [
      'run',
      'serve',
      '--',
      '--cluster-state',
      'examples/cluster.yaml',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
    ];
    const cli = npm ? start(process.execPath, [npm, ...args], true) : start('npm', args, true);
    const address = await cli.address;
    assert.equal(await readyz(address), 200);
    // A supervisor signals npm alone: npm passes SIGTERM to its script's process, which must be the server itself
    // (the script execs node), not a shell that dies and leaves the server running.
    cli.proc.kill('SIGTERM');
    const { stdout } = await cli.exited;
    assert.match(stdout, /"msg":"shutting down"/);
    await assert.rejects(fetch(`${address}/healthz`), 'nothing serves once npm is gone');
  });

  it('exits 1 naming the file and the object when the cluster-state file is malformed', async () => {
    const dir = await tempDir('cli-');
    const file = join(dir, 'broken.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: "not a list"\n');
    const { code, stderr } = await serve('--cluster-state', file, '--port', '0').exited;
    assert.equal(code, 1);
    assert.ok(stderr.includes(file), stderr);
    assert.match(stderr, /web/);
    assert.match(stderr, /containers/);
  });

  it('exits 1 naming the setting and its allowed values when a setting is invalid', async () => {
    const { code, stderr } = await serve('--log-level', 'chatty').exited;
    assert.equal(code, 1);
    assert.match(stderr, /--log-level="chatty".*allowed values are fatal, error, warn, info, debug, trace, silent/);
  });

  it('exits 1 naming the file when the cluster-state file does not exist', async () => {
    const { code, stderr, stdout } = await serve('--cluster-state', '/nonexistent/cluster.yaml', '--port', '0').exited;
    assert.equal(code, 1);
    assert.match(stderr, /\/nonexistent\/cluster\.yaml/);
    assert.doesNotMatch(stdout, /listening/i, 'it exits before it listens');
  });

  it('prints every setting with its flag and environment variable for --help', async () => {
    const { code, stdout } = await start(process.execPath, ['src/main.ts', '--help']).exited;
    assert.equal(code, 0);
    assert.match(stdout, /--cluster-state\s+TOPOLOGY_EXTENDER_CLUSTER_STATE/);
    assert.match(stdout, /--bind-timeout-seconds\s+TOPOLOGY_EXTENDER_BIND_TIMEOUT_SECONDS/);
  });
});

describe('what an operator reads', () => {
  const run = (...args: string[]) => start(process.execPath, ['src/main.ts', ...args]).exited;
  /** One line on stderr, a sentence without a stack trace or a JSON log line. */
  const oneSentence = (stderr: string) => {
    assert.equal(stderr.trimEnd().split('\n').length, 1, stderr);
    assert.doesNotMatch(stderr, /\n\s+at |^\{/, stderr);
  };

  it('a port in use: one plain sentence naming it, exit 1, "listening" never logged', async () => {
    const first = serve('--cluster-state', 'examples/cluster.yaml', '--port', '0');
    const port = new URL(await first.address).port;
    const { code, stderr, stdout } = await serve('--cluster-state', 'examples/cluster.yaml', '--port', port).exited;
    first.proc.kill('SIGTERM');
    await first.exited;
    assert.equal(code, 1);
    assert.equal(
      stderr,
      `topology-extender: cannot listen on 127.0.0.1:${port}: the port is already in use (choose another with --port)\n`,
    );
    assert.doesNotMatch(stdout, /listening|"err"/);
  });

  it('an empty or object-less cluster-state file: one sentence naming the file, exit 1, never listening', async () => {
    const dir = await tempDir('cli-');
    for (const [name, text] of [
      ['empty.yaml', ''],
      ['empty-list.yaml', 'apiVersion: v1\nkind: List\nitems: []\n'],
    ]) {
      const file = join(dir, name);
      await writeFile(file, text);
      const { code, stderr, stdout } = await serve('--cluster-state', file, '--port', '0').exited;
      assert.equal(code, 1, name);
      oneSentence(stderr);
      assert.equal(
        stderr,
        `topology-extender: ${file}: holds no Kubernetes objects (it is empty, or every document or List in it is)\n`,
      );
      assert.doesNotMatch(stdout, /listening/i, 'it exits before it listens');
    }
  });

  it('a host that does not resolve, a missing file, a bad kubeconfig: one sentence each, exit 1', async () => {
    const dir = await tempDir('cli-');
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, 'clusters: [');
    for (const args of [
      ['--cluster-state', 'examples/cluster.yaml', '--port', '0', '--host', 'no-such-host.invalid'],
      ['--cluster-state', join(dir, 'missing.yaml')],
      ['--kubeconfig', join(dir, 'missing')],
      ['--kubeconfig', kubeconfig],
    ]) {
      const { code, stderr } = await run('serve', ...args);
      assert.equal(code, 1, args.join(' '));
      oneSentence(stderr);
    }
  });

  it('logs one readable line per event with --log-format text, and "listening" once', async () => {
    const cli = start(process.execPath, [
      'src/main.ts',
      '--cluster-state',
      'examples/cluster.yaml',
      '--port',
      '0',
      '--log-format',
      'text',
    ]);
    let out = '';
    // One SIGTERM: a second one while shutting down ends the process at once, with status 1.
    let stopped = false;
    cli.proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk;
      if (!stopped && / INFO {2}listening /.test(out)) stopped = cli.proc.kill('SIGTERM');
    });
    const { code } = await cli.exited;
    assert.equal(code, 0);
    const lines = out.trimEnd().split('\n');
    for (const line of lines) assert.match(line, /^\d\d:\d\d:\d\d\.\d{3} (INFO |WARN |ERROR) \S/, line);
    assert.equal(lines.filter((l) => /listening/i.test(l)).length, 1, out);
    assert.ok(
      lines.some((l) => /\[cluster-state\] cluster-state: read 63 objects/.test(l)),
      out,
    );
  });

  it('--version, and -h on every command, each command with its own flags', async () => {
    assert.match((await run('--version')).stdout, /^topology-extender \d+\.\d+\.\d+\n$/);
    assert.match((await run('serve', '-h')).stdout, /--bind-timeout-seconds/);
    const explain = await run('explain', '--help');
    assert.equal(explain.code, 0);
    for (const flag of ['-o, --output', '--limit N', '--max-volumes N', '--nodes', '-f, --filename', '--cluster-state'])
      assert.ok(explain.stdout.includes(flag), `explain --help explains ${flag}`);
    // explain runs the whole default profile (test/ops/profiles.test.ts), not the volume plugins alone.
    assert.match(explain.stdout.replace(/\s+/g, ' '), /kube-scheduler's default profile is run on every node/);
    assert.doesNotMatch(explain.stdout, /each volume plugin/);
    const simulate = await run('simulate', '-h');
    assert.match(simulate.stdout, /--replicas N\s+how many/);
  });
});

describe('the topology-extender command (package.json bin)', () => {
  // PATH as a shell has it, without npm's node_modules/.bin: `#!/usr/bin/env node` finds the machine's own node
  // (Node 20 on this project's machines, which cannot run src/main.ts itself).
  const PATH = process.env
    .PATH!.split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':');

  it("runs `topology-extender serve` on the machine's own node, serves, and exits 0 on SIGTERM", async () => {
    const cli = start(
      'bin/topology-extender.js',
      ['serve', '--cluster-state', 'examples/cluster.yaml', '--port', '0'],
      false,
      {
        PATH,
      },
    );
    const address = await cli.address;
    assert.equal(await readyz(address), 200);
    cli.proc.kill('SIGTERM');
    const { code, stdout } = await cli.exited;
    assert.equal(code, 0);
    assert.match(stdout, /"msg":"shutting down"/);
  });

  it('`npx topology-extender serve` leaves no server behind when npx is sent SIGTERM', async () => {
    // npx runs the command under `sh -c`, which does not pass SIGTERM on: the command must notice it was orphaned.
    const cli = start('npx', ['topology-extender', 'serve', '--cluster-state', 'examples/cluster.yaml', '--port', '0']);
    const address = await cli.address;
    assert.equal(await readyz(address), 200);
    cli.proc.kill('SIGTERM');
    await cli.exited;
    let serving = true;
    for (let i = 0; i < 400 && serving; i++) {
      serving = await fetch(`${address}/readyz`).then(
        () => true,
        () => false,
      );
      if (serving) await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(serving, false, `${address} still answers 10 s after npx ended`);
  });

  it('passes the exit status through: 1 for an invalid setting', async () => {
    const { code, stderr } = await start('bin/topology-extender.js', ['serve', '--log-level', 'chatty'], false, {
      PATH,
    }).exited;
    assert.equal(code, 1);
    assert.match(stderr, /--log-level="chatty"/);
  });
});
