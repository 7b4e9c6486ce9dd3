// Admission before work: past a limit on connections, request bodies held or verbs waiting, a request is answered 503
// with Retry-After from its headers alone (its body is never sent in these tests, so it cannot have been read), the
// refusal is counted by reason in /metrics, and what a request held is free again once it is answered.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Admission, admissionLimits } from '../../src/http/admission.ts';
import { VerbCosts } from '../../src/http/verb-queue.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { node, pod } from '../helpers/objects.ts';

const MiB = 2 ** 20;

describe('admission limits', () => {
  it('default from the memory budget, and each one set wins', () => {
    assert.deepEqual(admissionLimits({ memoryBudget: 1024 * MiB }), {
      memoryBudget: 1024 * MiB,
      maxConnections: 1024,
      maxBodyBytesHeld: 32 * MiB,
      maxQueuedVerbs: 256,
      maxQueuedWorkSeconds: 0.1,
    });
    assert.deepEqual(admissionLimits({ memoryBudget: 64 * MiB, maxQueuedVerbs: 3, maxQueuedWorkSeconds: 2 }), {
      memoryBudget: 64 * MiB,
      maxConnections: 64,
      maxBodyBytesHeld: 2 * MiB,
      maxQueuedVerbs: 3,
      maxQueuedWorkSeconds: 2,
    });
  });

  describe('the work waiting is bounded by time, each verb at its recent mean, once the queue stops draining', () => {
    const request = () => ({ headers: {}, socket: {} }) as IncomingMessage;
    /** A clock that moves a second each time it is read: the verbs waiting have always waited long. */
    const stepping = () => {
      let ms = 0;
      return () => (ms += 1000);
    };
    /** Verbs that cost `costs` ms. */
    const admission = (costs: Record<string, number>, now = stepping()) =>
      new Admission(
        { ...admissionLimits({ memoryBudget: 1024 * MiB }), maxQueuedWorkSeconds: 0.01 },
        MiB,
        () => {},
        { estimate: (verb) => costs[verb] ?? 0 },
        now,
      );

    it('refuses a verb once the verbs waiting are expected to take the limit; starting one makes room', () => {
      const a = admission({ filter: 4 });
      const waiting = [request(), request(), request()];
      for (const r of waiting) assert.equal(a.admit(r, 'filter'), undefined);
      assert.equal(a.queuedWork, 12);
      assert.equal(a.admit(request(), 'filter'), 'queued_work');
      assert.match(
        a.message('queued_work'),
        /the 3 verbs waiting to start will take about 0\.012 s \(maxQueuedWorkSeconds\)/,
      );
      a.started(waiting[0]);
      assert.equal(a.queuedWork, 8);
      assert.equal(a.admit(request(), 'filter'), undefined);
    });

    it('verbs whose clients left are not work waiting: the request read with their closes is admitted', () => {
      const a = admission({ filter: 4 });
      const waiting = [request(), request(), request()];
      for (const r of waiting) assert.equal(a.admit(r, 'filter'), undefined);
      assert.equal(a.admit(request(), 'filter'), 'queued_work');
      // kube-scheduler gave up on two of them: their FINs are read, their 'close' events (release) not yet.
      for (const r of waiting.slice(0, 2)) (r.socket as { readableEnded: boolean }).readableEnded = true;
      assert.equal(a.admit(request(), 'filter'), undefined);
      assert.equal(a.queuedVerbs, 2);
      assert.equal(a.queuedWork, 8);
      // Released later, they are not taken off twice.
      for (const r of waiting) a.release(r);
      assert.equal(a.queuedVerbs, 1);
      assert.equal(a.queuedWork, 4);
    });

    it('a burst is admitted whole while the oldest verb waiting has waited less than the limit', () => {
      const clock = { ms: 0 };
      const a = admission({ bind: 4 }, () => clock.ms);
      for (let i = 0; i < 20; i++) assert.equal(a.admit(request(), 'bind'), undefined);
      clock.ms = 10;
      assert.equal(a.admit(request(), 'bind'), 'queued_work');
    });

    it('a cheap verb (bind) queues many where an expensive one (filter) queues few', () => {
      const costs = { filter: 5, bind: 0.125 };
      const filters = admission(costs);
      let admitted = 0;
      while (filters.admit(request(), 'filter') === undefined) admitted++;
      assert.equal(admitted, 2);
      const binds = admission(costs);
      admitted = 0;
      while (binds.admit(request(), 'bind') === undefined) admitted++;
      assert.equal(admitted, 80);
    });

    it('a verb never measured is admitted, and never blocks the ones behind it', () => {
      const a = admission({});
      for (let i = 0; i < 50; i++) assert.equal(a.admit(request(), 'preempt'), undefined);
      assert.equal(a.queuedWork, 0);
    });

    it('probes and the ops API are not verbs: never counted as waiting work', () => {
      const a = admission({ filter: 50 });
      assert.equal(a.admit(request(), 'filter'), undefined);
      assert.equal(a.admit(request(), undefined), undefined);
      assert.equal(a.queuedVerbs, 1);
    });

    it('the means follow recent costs', () => {
      const costs = new VerbCosts();
      costs.record('filter', 8);
      for (let i = 0; i < 40; i++) costs.record('filter', 1);
      assert.ok(costs.estimate('filter') < 1.1, `mean ${costs.estimate('filter')}`);
      // Ten times slower for good (the cluster grew): learned within a few dozen verbs.
      for (let i = 0; i < 60; i++) costs.record('filter', 10);
      assert.ok(costs.estimate('filter') > 9, `mean ${costs.estimate('filter')}`);
    });

    it('one verb slowed by a pause (a major GC) does not make its kind look slow', () => {
      const costs = new VerbCosts();
      for (let i = 0; i < 10; i++) costs.record('prioritize', 0.5);
      costs.record('prioritize', 80);
      assert.ok(costs.estimate('prioritize') < 0.8, `mean ${costs.estimate('prioritize')}`);
    });
  });

  it('the budget defaults to a limit of this process (cgroup or heap)', () => {
    assert.ok(admissionLimits({}).memoryBudget > 0);
  });
});

describe('admission over real sockets', () => {
  let t: TestExtender;
  let port: number;
  const sockets: Socket[] = [];
  before(async () => {
    t = await createTestExtender([node('node-a', { zone: 'a' }), node('node-b', { zone: 'b' })], {
      maxConnections: 4,
      maxBodyBytesHeld: 64 * 1024,
      maxQueuedVerbs: 2,
      // Out of the way of the other limits; its own test has a server of its own.
      maxQueuedWorkSeconds: 3600,
    });
    await t.extender.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.extender.app.server.address() as { port: number }).port;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await t.close();
  });

  const open = (to = port) =>
    new Promise<Socket>((resolve, reject) => {
      const s = connect(to, '127.0.0.1', () => resolve(s));
      s.on('error', reject);
      sockets.push(s);
    });
  const head = (path: string, length: number | 'chunked') =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
    (length === 'chunked' ? 'Transfer-Encoding: chunked\r\n\r\n' : `Content-Length: ${length}\r\n\r\n`);
  /** Writes `raw` and resolves with the first answer on the socket. */
  const answer = (s: Socket, raw: string) =>
    new Promise<string>((resolve) => {
      let text = '';
      const onData = (d: Buffer) => {
        text += d.toString();
        const end = text.indexOf('\r\n\r\n');
        const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? Number.NaN);
        if (end >= 0 && text.length >= end + 4 + length) {
          s.off('data', onData);
          resolve(text);
        }
      };
      s.on('data', onData);
      s.write(raw);
    });
  const filterBody = JSON.stringify({ Pod: pod('p', { uid: 'p' }), Nodes: null, NodeNames: ['node-a', 'node-b'] });
  /** A filter whose body is padded to `bytes`. */
  const paddedFilter = (bytes: number) => {
    const body = `${filterBody.slice(0, -1)},"pad":"${'x'.repeat(bytes - filterBody.length - 9)}"}`;
    assert.equal(body.length, bytes);
    return body;
  };
  const metrics = async (of = t) => (await of.extender.app.inject({ url: '/metrics' })).body;
  const rejected = async (reason: string, of = t) =>
    Number(new RegExp(`admission_rejected_total\\{reason="${reason}"\\} (\\d+)`).exec(await metrics(of))?.[1] ?? 0);
  /** Waits until the server holds `value` of `resource` (topology_extender_admission_held). */
  const holds = async (resource: string, value: number, of = t) => {
    const pattern = new RegExp(`admission_held\\{resource="${resource}"\\} (\\d+)`);
    for (let i = 0; i < 1000; i++) {
      if (Number(pattern.exec(await metrics(of))?.[1]) === value) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.fail(`the server never held ${value} ${resource}`);
  };
  const assertOverloaded = (text: string, setting: string) => {
    assert.match(text, /^HTTP\/1.1 503/);
    assert.match(text, /\r\nretry-after: 1\r\n/i);
    // Closed with the unread body, except past the verbs waiting: that body is small and the connection reused.
    if (setting === 'maxQueuedVerbs' || setting === 'maxQueuedWorkSeconds')
      assert.match(text, /\r\nconnection: keep-alive\r\n/i);
    else assert.match(text, /\r\nconnection: close\r\n/i);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    assert.equal(body.statusCode, 503);
    assert.equal(body.error, 'Service Unavailable');
    assert.match(body.message, new RegExp(`\\(${setting}\\)`));
  };

  // Each test starts with no connection open.
  beforeEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await holds('connections', 0);
  });

  it('a body that would exceed the bytes held is refused from its Content-Length, unread; answered ones free theirs', async () => {
    const size = 40 * 1024;
    const body = paddedFilter(size);
    const holder = await open();
    // The first request's body is half sent: admitted, its 40 KiB held.
    holder.write(head('/scheduler/filter', size) + body.slice(0, 1000));
    await holds('body_bytes', size);
    const before = await rejected('body_bytes');
    const refused = await open();
    assertOverloaded(await answer(refused, head('/scheduler/filter', size)), 'maxBodyBytesHeld');
    assert.equal((await rejected('body_bytes')) - before, 1);
    // The holder's request completes and is answered: its bytes are free, a request as large is admitted.
    assert.match(await answer(holder, body.slice(1000)), /^HTTP\/1.1 200/);
    await holds('body_bytes', 0);
    assert.match(await answer(await open(), head('/scheduler/filter', size) + body), /^HTTP\/1.1 200/);
  });

  it('a chunked body is counted as it streams and refused once the bytes held pass the limit', async () => {
    const size = 40 * 1024;
    const holder = await open();
    holder.write(head('/scheduler/filter', size) + paddedFilter(size).slice(0, 1000));
    await holds('body_bytes', size);
    const before = await rejected('body_bytes');
    const chunk = paddedFilter(size);
    const text = await answer(
      await open(),
      `${head('/scheduler/filter', 'chunked')}${chunk.length.toString(16)}\r\n${chunk}\r\n`,
    );
    assertOverloaded(text, 'maxBodyBytesHeld');
    assert.equal((await rejected('body_bytes')) - before, 1);
    holder.destroy();
    await holds('body_bytes', 0);
  });

  it('a verb past the ones waiting to start is refused at once; they are computed when their bodies come', async () => {
    // Two verbs admitted whose bodies have not arrived: waiting to start.
    const waiting = [await open(), await open()];
    for (const s of waiting) s.write(head('/scheduler/prioritize', filterBody.length));
    await holds('queued_verbs', 2);
    const before = await rejected('queued_verbs');
    assertOverloaded(await answer(await open(), head('/scheduler/prioritize', filterBody.length)), 'maxQueuedVerbs');
    assert.equal((await rejected('queued_verbs')) - before, 1);
    for (const s of waiting) assert.match(await answer(s, filterBody), /^HTTP\/1.1 200/);
    await holds('queued_verbs', 0);
    const fresh = await answer(await open(), head('/scheduler/prioritize', filterBody.length) + filterBody);
    assert.match(fresh, /^HTTP\/1.1 200/);
  });

  // Without the bound the refused request would wait for a body never sent: the timeout turns that into a failure.
  it('a verb past the work waiting to start is refused at once, on the connection it came on', {
    timeout: 30_000,
  }, async () => {
    // The least limit there is: any verb waiting with a known cost is work enough to refuse the next.
    const w = await createTestExtender([node('node-a', { zone: 'a' })], { maxQueuedWorkSeconds: Number.MIN_VALUE });
    try {
      await w.extender.app.listen({ host: '127.0.0.1', port: 0 });
      const to = (w.extender.app.server.address() as { port: number }).port;
      const prioritize = head('/scheduler/prioritize', filterBody.length);
      // A prioritize computed once: its cost is known.
      assert.match(await answer(await open(to), prioritize + filterBody), /^HTTP\/1.1 200/);
      const waiting = await open(to);
      waiting.write(prioritize);
      await holds('queued_verbs', 1, w);
      assertOverloaded(await answer(await open(to), prioritize), 'maxQueuedWorkSeconds');
      assert.equal(await rejected('queued_work', w), 1);
      assert.match(await answer(waiting, filterBody), /^HTTP\/1.1 200/);
      await holds('queued_verbs', 0, w);
      assert.match(await answer(await open(to), prioritize + filterBody), /^HTTP\/1.1 200/);
    } finally {
      for (const s of sockets.splice(0)) s.destroy();
      await w.close();
    }
  });

  it('requests on connections past the limit are refused; the probes on them are served', async () => {
    const held = [await open(), await open(), await open(), await open()];
    await holds('connections', held.length);
    const before = await rejected('connections');
    const fifth = await open();
    assert.match(await answer(fifth, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1.1 200/);
    assertOverloaded(await answer(fifth, head('/scheduler/filter', filterBody.length)), 'maxConnections');
    assert.equal((await rejected('connections')) - before, 1);
    for (const s of held)
      assert.match(await answer(s, head('/scheduler/filter', filterBody.length) + filterBody), /^HTTP\/1.1 200/);
  });
});
