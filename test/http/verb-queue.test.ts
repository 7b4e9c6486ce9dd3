// No work for departed clients and no unbounded backlog: verbs run one at a time in arrival order; one whose client
// closed the connection is skipped, one that waited past verbDeadlineSeconds is answered 503 uncomputed, and both
// show in /metrics.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ACCEPT_TURNS, VerbDropped, VerbQueue } from '../../src/http/verb-queue.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { node, pod } from '../helpers/objects.ts';
import { httpRequest, openSocket, roundTrip } from '../helpers/raw-http.ts';

// Arrival times are on the queue's clock, which these tests fix at 0 unless they move it.
const request = (verb: string, gone = false, arrivedAt = 0) => ({ verb, arrivedAt, gone: () => gone });

describe('VerbQueue', () => {
  it('runs verbs one at a time in arrival order', async () => {
    const queue = new VerbQueue({ deadlineMs: 5000, now: () => 0 });
    const ran: number[] = [];
    const results = await Promise.all([1, 2, 3].map((i) => queue.run(request('filter'), () => ran.push(i))));
    assert.deepEqual(ran, [1, 2, 3]);
    assert.deepEqual(results, [1, 2, 3]);
    assert.equal(queue.depth(), 0);
  });

  it('skips a verb whose client closed the connection, and runs the one behind it', async () => {
    const dropped: string[] = [];
    const queue = new VerbQueue({
      deadlineMs: 5000,
      now: () => 0,
      onDrop: (verb, reason) => dropped.push(`${verb}:${reason}`),
    });
    let computed = 0;
    const gone = queue.run(request('filter', true), () => ++computed);
    const live = queue.run(request('prioritize'), () => ++computed);
    await assert.rejects(gone, (err: unknown) => err instanceof VerbDropped && err.reason === 'client_gone');
    assert.equal(await live, 1);
    assert.equal(computed, 1);
    assert.deepEqual(dropped, ['filter:client_gone']);
  });

  it('decides whether the client left only after a close sent with the request can have been read', async () => {
    const queue = new VerbQueue({ deadlineMs: 5000, now: () => 0 });
    let gone = false;
    let computed = 0;
    const verb = queue.run({ verb: 'filter', arrivedAt: 0, gone: () => gone }, () => ++computed);
    // Node reads the client's FIN in the turn after the request's last data.
    setImmediate(() => (gone = true));
    await assert.rejects(verb, (err: unknown) => err instanceof VerbDropped && err.reason === 'client_gone');
    assert.equal(computed, 0);
  });

  it('answers a verb that waited past its deadline with an error naming the setting, without computing it', async () => {
    let now = 0;
    const queue = new VerbQueue({ deadlineMs: 5000, now: () => now });
    let computed = 0;
    const late = queue.run(request('filter', false, 0), () => ++computed);
    const fresh = queue.run(request('filter', false, 5500), () => ++computed);
    now = 6000; // both waited; only the first past 5 s
    await assert.rejects(late, /filter: waited 6\.00 s .* past its 5 s deadline \(verbDeadlineSeconds\)/);
    assert.equal(await fresh, 1);
    assert.equal(computed, 1);
  });

  it('says when the last verb answered (its synchronous part ended), a failed one too', async () => {
    let now = 0;
    const queue = new VerbQueue({ deadlineMs: 5000, now: () => now });
    assert.equal(queue.lastAnswer(), Number.NEGATIVE_INFINITY);
    await queue.run(request('filter'), () => {
      now = 7;
    });
    assert.equal(queue.lastAnswer(), 7);
    await assert.rejects(
      queue.run(request('prioritize'), () => {
        now = 9;
        throw new Error('boom');
      }),
    );
    assert.equal(queue.lastAnswer(), 9);
  });

  it('tells how long each started verb waited and how long its synchronous part held the loop', async () => {
    let now = 0;
    const seen: string[] = [];
    const cpu: number[] = [];
    const queue = new VerbQueue({
      deadlineMs: 5000,
      now: () => now,
      onStart: (verb, waitedMs) => seen.push(`${verb} waited ${waitedMs}`),
      onComputed: (verb, ms, cpuMs) => {
        seen.push(`${verb} computed ${ms}`);
        // The main thread's CPU, which a verb spinning for real shows (the queue's clock is the fake one).
        cpu.push(cpuMs);
      },
    });
    now = 3; // the verbs arrived at 0 and 1
    const first = queue.run(request('filter', false, 0), () => {
      now += 2;
      // 20 ms of the main thread's CPU, however long a busy machine makes that take.
      const start = process.threadCpuUsage();
      for (let used = 0; used < 20_000; ) {
        const d = process.threadCpuUsage(start);
        used = d.user + d.system;
      }
    });
    const second = queue.run(request('prioritize', false, 1), async () => {
      now += 1;
      await new Promise((resolve) => setTimeout(resolve, 5)); // what it awaits is not its compute
    });
    await Promise.all([first, second]);
    assert.deepEqual(seen, ['filter waited 3', 'filter computed 2', 'prioritize waited 4', 'prioritize computed 1']);
    assert.ok(cpu[0] >= 20, `the spinning verb's CPU is counted (${cpu[0]} ms)`);
    assert.ok(cpu[1] < cpu[0], `what the second verb awaits is not its CPU (${cpu[1]} ms)`);
  });

  it('starts the next verb while an async one (bind) is still waiting', async () => {
    const queue = new VerbQueue({ deadlineMs: 5000, now: () => 0 });
    let release = () => {};
    const bind = queue.run(request('bind'), () => new Promise<string>((r) => (release = () => r('bound'))));
    assert.equal(await queue.run(request('filter'), () => 'filtered'), 'filtered');
    release();
    assert.equal(await bind, 'bound');
  });

  it('a verb that throws rejects only its own request', async () => {
    const queue = new VerbQueue({ deadlineMs: 5000, now: () => 0 });
    const bad = queue.run(request('filter'), () => {
      throw new Error('boom');
    });
    const good = queue.run(request('filter'), () => 'ok');
    await assert.rejects(bad, /boom/);
    assert.equal(await good, 'ok');
  });
  it('turns the loop before the next verb while connections keep being accepted (libuv accepts one per turn)', async () => {
    let accepted = 0;
    const queue = new VerbQueue({ deadlineMs: 5000, now: () => 0, accepted: () => accepted });
    // A connection accepted in each of the next 10 turns.
    const arrive = (left: number) => {
      if (left === 0) return;
      setImmediate(() => {
        accepted++;
        arrive(left - 1);
      });
    };
    arrive(10);
    assert.equal(await queue.run(request('filter'), () => accepted), 10);
  });

  it('a flood of connections delays a verb by at most ACCEPT_TURNS turns', async () => {
    let accepted = 0;
    let flooding = true;
    const queue = new VerbQueue({ deadlineMs: 5000, now: () => 0, accepted: () => accepted });
    const flood = (): void => {
      if (!flooding) return;
      setImmediate(() => {
        accepted++;
        flood();
      });
    };
    flood();
    const ranAfter = await queue.run(request('filter'), () => accepted);
    flooding = false;
    assert.ok(ranAfter <= ACCEPT_TURNS + 4, `the verb waited ${ranAfter} turns`);
  });

  it('keeps no verb it has started: its request (the parsed body) can be collected at once', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const queue = new VerbQueue({ deadlineMs: 5000, now: () => 0 });
    // The body is reachable only from the work the queue was given.
    const start = () => {
      const body = { NodeNames: Array.from({ length: 500 }, (_, i) => `node-${i}`) };
      return { collected: new WeakRef(body), done: queue.run(request('filter'), () => body.NodeNames.length) };
    };
    const { collected, done } = start();
    assert.equal(await done, 500);
    // A few turns and collections: what the engine itself holds for a moment must not fail the test; a body the
    // queue keeps stays reachable however often it runs.
    for (let i = 0; i < 5 && collected.deref() !== undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
    }
    assert.equal(collected.deref(), undefined);
  });
});

describe('abandoned requests over real sockets', () => {
  let t: TestExtender;
  let port: number;
  before(async () => {
    t = await createTestExtender([node('node-a', { zone: 'a' }), node('node-b', { zone: 'b' })]);
    await t.extender.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.extender.app.server.address() as { port: number }).port;
  });
  after(() => t.close());

  const open = () => openSocket(port);
  const metric = async (pattern: RegExp) => {
    const text = (await t.request.get('/metrics')).text;
    return Number(pattern.exec(text)?.[1] ?? 0);
  };

  it('a burst of abandoned filters is never computed: only the real filter behind it is', async () => {
    const burst = 40;
    const body = JSON.stringify({ Pod: pod('p', { uid: 'p' }), Nodes: null, NodeNames: ['node-a', 'node-b'] });
    const sockets = await Promise.all(Array.from({ length: burst + 1 }, open));
    for (const s of sockets) assert.match(await roundTrip(s, httpRequest('GET', '/healthz')), /^HTTP\/1.1 200/);
    const okBefore = await metric(/topology_extender_verb_results_total\{verb="filter",outcome="ok"\} (\d+)/);
    const real = sockets.pop()!;
    // kube-scheduler gave up on these: each request is sent and its connection closed at once.
    for (const s of sockets) s.end(httpRequest('POST', '/scheduler/filter', body));
    const answer = await roundTrip(real, httpRequest('POST', '/scheduler/filter', body));
    assert.match(answer, /^HTTP\/1.1 200/);
    assert.match(answer, /"NodeNames":\["node-a","node-b"\]/);
    real.destroy();
    await t.waitFor(() => sockets.every((s) => s.destroyed));
    const skipped = await metric(/topology_extender_verb_dropped_total\{verb="filter",reason="client_gone"\} (\d+)/);
    const computed =
      (await metric(/topology_extender_verb_results_total\{verb="filter",outcome="ok"\} (\d+)/)) - okBefore;
    // No abandoned filter is computed: each is skipped, or never reached a handler (its close was read first).
    assert.ok(skipped >= burst / 2, `only ${skipped} of ${burst} abandoned filters were skipped`);
    assert.equal(computed, 1, 'only the real filter was computed');
  });

  it('a verb whose client sent it and left is never computed, however Node orders its data and FIN; fresh ones are', async () => {
    // A body of several reads (kube-scheduler's non-cache filters are MiBs): the request is complete on its last read.
    const body = JSON.stringify({
      Pod: pod('p', { uid: 'p' }),
      Nodes: null,
      NodeNames: ['node-a', 'node-b'],
      padding: 'x'.repeat(2 ** 20),
    });
    const real = await open();
    assert.match(await roundTrip(real, httpRequest('GET', '/healthz')), /^HTTP\/1.1 200/);
    const started = () => metric(/topology_extender_verb_started_total\{verb="filter"\} (\d+)/);
    const startedBefore = await started();
    // Each abandoned request's data and its FIN (or RST) reach the server together; the fresh filter sent right
    // behind it keeps the queue busy. Node reads the data in one turn and the FIN in a later one.
    const leave = [(s: Socket, raw: string) => s.end(raw), (s: Socket, raw: string) => s.write(raw, () => s.destroy())];
    const rounds = 10;
    const abandoned: Socket[] = [];
    for (let i = 0; i < rounds; i++) {
      const s = await open();
      s.on('error', () => {}).resume();
      abandoned.push(s);
      leave[i % leave.length](s, httpRequest('POST', '/scheduler/filter', body));
      assert.match(await roundTrip(real, httpRequest('POST', '/scheduler/filter', body)), /^HTTP\/1.1 200/);
    }
    real.destroy();
    await t.waitFor(() => abandoned.every((s) => s.destroyed));
    assert.equal((await started()) - startedBefore, rounds, 'only the fresh filters were computed');
  });

  it('new connections are accepted and answered while verbs are queued, not one per verb', async () => {
    const count = 40;
    const body = JSON.stringify({ Pod: pod('p', { uid: 'p' }), Nodes: null, NodeNames: ['node-a', 'node-b'] });
    const busy = await Promise.all(Array.from({ length: count }, open));
    for (const s of busy) assert.match(await roundTrip(s, httpRequest('GET', '/healthz')), /^HTTP\/1.1 200/);
    const order: string[] = [];
    const answered = (s: Socket, what: string) =>
      new Promise<void>((resolve) => s.once('data', () => resolve(void order.push(what))));
    // The verbs queue at once; the new connections reach the kernel's accept queue while they wait.
    const filters = busy.map((s) => {
      s.write(httpRequest('POST', '/scheduler/filter', body));
      return answered(s, 'filter');
    });
    const fresh = Array.from({ length: count }, () => {
      const s = connect(port, '127.0.0.1');
      s.write(httpRequest('GET', '/healthz'));
      return { s, done: answered(s, 'fresh') };
    });
    await Promise.all([...filters, ...fresh.map((f) => f.done)]);
    for (const s of [...busy, ...fresh.map((f) => f.s)]) s.destroy();
    const filtersFirst = order.slice(0, order.lastIndexOf('fresh')).filter((w) => w === 'filter').length;
    // One accept per verb would answer the last new connection after about `count` filters.
    assert.ok(
      filtersFirst < count / 4,
      `${filtersFirst} of ${count} filters were answered before the last new connection`,
    );
  });

  it('exposes the queue depth', async () => {
    assert.match((await t.request.get('/metrics')).text, /topology_extender_verb_queue_depth 0/);
  });

  it("exposes each started verb's wait in the queue, its compute and that compute's CPU, as histograms by verb", async () => {
    const count = (name: string) =>
      metric(new RegExp(`topology_extender_verb_${name}_seconds_count\\{verb="prioritize"\\} (\\d+)`));
    const before = {
      wait: await count('queue_wait'),
      compute: await count('compute'),
      cpu: await count('compute_cpu'),
    };
    const body = { Pod: pod('p', { uid: 'p' }), Nodes: null, NodeNames: ['node-a', 'node-b'] };
    assert.equal((await t.request.post('/scheduler/prioritize').send(body)).status, 200);
    assert.equal((await count('queue_wait')) - before.wait, 1);
    assert.equal((await count('compute')) - before.compute, 1);
    assert.equal((await count('compute_cpu')) - before.cpu, 1);
  });
});
