import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { podBindingState, writeThenReadBack } from '../../src/cluster/read-back.ts';
import type { Pod } from '../../src/cluster/types.ts';
import { WriteError } from '../../src/cluster/writer.ts';

const conflict = new WriteError(409, 'Conflict', 'the object has been modified');
const lost = new WriteError(503, 'ServiceUnavailable', 'reply lost', true);
const refused = new WriteError(422, 'Invalid', 'invalid');

describe('writeThenReadBack', () => {
  it('a write that lands is written, and nothing is read', async () => {
    let reads = 0;
    const out = await writeThenReadBack(async () => 'stored', { readBack: async () => reads++ });
    assert.deepEqual(out, { kind: 'written', value: 'stored' });
    assert.equal(reads, 0);
  });

  it('a 409 is read back as a conflict; an unknown outcome only when asked', async () => {
    const read = async () => 'now';
    assert.deepEqual(
      await writeThenReadBack(
        async () => {
          throw conflict;
        },
        { readBack: read },
      ),
      { kind: 'conflict', error: conflict, current: 'now' },
    );
    const unknown = () =>
      writeThenReadBack(
        async () => {
          throw lost;
        },
        { readBack: read, unknown: true },
      );
    assert.deepEqual(await unknown(), { kind: 'unknown', error: lost, current: 'now' });
    await assert.rejects(
      writeThenReadBack(
        async () => {
          throw lost;
        },
        { readBack: read },
      ),
      (err) => err === lost,
    );
  });

  it('other failures, and every failure without a readBack, are thrown as they are', async () => {
    for (const [err, options] of [
      [refused, { readBack: async () => 'x', unknown: true }],
      [new Error('not a write error'), { readBack: async () => 'x', unknown: true }],
      [conflict, {}],
    ] as const) {
      await assert.rejects(
        writeThenReadBack(async () => {
          throw err;
        }, options),
        (e) => e === err,
      );
    }
  });

  it('a read back that fails is unread, with both errors', async () => {
    const readError = new Error('connection refused');
    const out = await writeThenReadBack(
      async () => {
        throw conflict;
      },
      {
        readBack: async () => {
          throw readError;
        },
      },
    );
    assert.deepEqual(out, { kind: 'unread', error: conflict, readError });
  });
});

describe('podBindingState', () => {
  const pod = (uid: string, nodeName?: string) =>
    ({ metadata: { name: 'web', namespace: 'default', uid }, spec: { nodeName } }) as unknown as Pod;
  it("'' bound to the node, undefined not bound, why otherwise", () => {
    assert.equal(podBindingState(pod('u1', 'node-a'), 'default/web', 'u1', 'node-a'), '');
    assert.equal(podBindingState(pod('u1'), 'default/web', 'u1', 'node-a'), undefined);
    assert.equal(
      podBindingState(pod('u1', 'node-b'), 'default/web', 'u1', 'node-a'),
      'pod "default/web" is already bound to node "node-b"',
    );
    assert.equal(
      podBindingState(pod('u2', 'node-a'), 'default/web', 'u1', 'node-a'),
      'pod "default/web" has UID u2, not u1: it was deleted and created again',
    );
    assert.equal(podBindingState(undefined, 'default/web', 'u1', 'node-a'), 'pod "default/web" not found');
  });
});
