// The framework runner: plugin order, first rejection wins, Skip, score mapping to 0..10, reserve rollback.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeInfo } from '../../src/cache/node-info.ts';
import { newNodeInfo } from '../../src/cache/node-info.ts';
import type { Pod } from '../../src/cluster/types.ts';
import { CycleState } from '../../src/framework/cycle-state.ts';
import { type AnyPlugin, SKIP, type Status, SUCCESS, status } from '../../src/framework/interfaces.ts';
import { Framework, FrameworkError } from '../../src/framework/runner.ts';
import { node, pod } from '../helpers/objects.ts';

const infos = new Map<string, NodeInfo>(['a', 'b', 'c'].map((n) => [n, newNodeInfo(node(n))]));
const lookup = (name: string) => infos.get(name);
const unknown = (name: string) => `unknown ${name}`;
const p = pod('p');

function filterPlugin(name: string, verdicts: Record<string, Status>): AnyPlugin {
  return { name, filter: (_s: CycleState, _p: Pod, info: NodeInfo) => verdicts[info.name] ?? SUCCESS };
}

describe('filterNodes', () => {
  it('sorts nodes into feasible, Unschedulable (FailedNodes) and UnschedulableAndUnresolvable', () => {
    const fw = new Framework([
      filterPlugin('limits', { b: status('Unschedulable', 'node(s) exceed max volume count') }),
      filterPlugin('binding', {
        c: status(
          'UnschedulableAndUnresolvable',
          "node(s) didn't match PersistentVolume's node affinity",
          "node(s) didn't find available persistent volumes to bind",
        ),
      }),
    ]);
    const out = fw.filterNodes(p, ['a', 'b', 'c', 'x'], lookup, unknown);
    assert.deepEqual(out.feasible, ['a']);
    assert.deepEqual(
      [...out.failed],
      [
        ['b', 'node(s) exceed max volume count'],
        ['x', 'unknown x'],
      ],
    );
    assert.deepEqual(
      [...out.unresolvable],
      [
        [
          'c',
          "node(s) didn't match PersistentVolume's node affinity, node(s) didn't find available persistent volumes to bind",
        ],
      ],
    );
  });

  it('stops at the first plugin that rejects a node, as upstream RunFilterPlugins does', () => {
    const secondCalledFor: string[] = [];
    const fw = new Framework([
      filterPlugin('first', { a: status('Unschedulable', 'first says no') }),
      {
        name: 'second',
        filter: (_s: CycleState, _p: Pod, info: NodeInfo) => {
          secondCalledFor.push(info.name);
          return SUCCESS;
        },
      },
    ]);
    const out = fw.filterNodes(p, ['a', 'b'], lookup, unknown);
    assert.equal(out.failed.get('a'), 'first says no');
    assert.deepEqual(secondCalledFor, ['b']);
  });

  it('skips the filter of a plugin whose preFilter answered Skip', () => {
    const fw = new Framework([
      { name: 'skipper', preFilter: () => SKIP, filter: () => status('Unschedulable', 'must not run') },
    ]);
    assert.deepEqual(fw.filterNodes(p, ['a', 'b'], lookup, unknown).feasible, ['a', 'b']);
  });

  it('fails every known node alike when a preFilter rejects the pod', () => {
    const fw = new Framework([
      {
        name: 'claims',
        preFilter: () => status('UnschedulableAndUnresolvable', 'persistentvolumeclaim "x" not found'),
      },
    ]);
    const out = fw.filterNodes(p, ['a', 'b', 'x'], lookup, unknown);
    assert.deepEqual(out.feasible, []);
    assert.deepEqual([...out.unresolvable.keys()], ['a', 'b']);
    assert.equal(out.unresolvable.get('a'), 'persistentvolumeclaim "x" not found');
    assert.equal(out.failed.get('x'), 'unknown x');
  });

  it('throws FrameworkError, naming the plugin, when a plugin reports an internal Error', () => {
    const fw = new Framework([filterPlugin('broken', { a: status('Error', 'no class for claim "ns/c"') })]);
    assert.throws(
      () => fw.filterNodes(p, ['a'], lookup, unknown),
      (err: unknown) => err instanceof FrameworkError && err.message === 'broken: no class for claim "ns/c"',
    );
  });

  it('hears of nominated pods through a preFilter extension the pod did not skip, even when every filter skipped it', () => {
    const nominator = {
      nominatedPodsForNode: (n: string) => (n === 'a' ? [{ pod: pod('nominated'), priority: 10 }] : []),
    };
    const fw = new Framework(
      [
        { name: 'skipper', preFilter: () => SKIP, filter: () => status('Unschedulable', 'must not run') },
        {
          name: 'tracker',
          preFilter: () => SUCCESS,
          addPod: () => status('Error', 'cannot add the nominated pod'),
          removePod: () => SUCCESS,
        },
      ],
      { nominator },
    );
    assert.throws(
      () => fw.filterNodes(p, ['b', 'a'], lookup, unknown),
      (err: unknown) => err instanceof FrameworkError && err.message === 'tracker: cannot add the nominated pod',
    );
  });

  it('passes every known node, and fails unknown ones, when every plugin skipped the pod', () => {
    const nominator = { nominatedPodsForNode: () => [{ pod: pod('nominated'), priority: 10 }] };
    const fw = new Framework(
      [
        {
          name: 'skipper',
          preFilter: () => SKIP,
          filter: () => status('Unschedulable', 'must not run'),
          addPod: () => status('Error', 'must not be told'),
          removePod: () => SUCCESS,
        },
      ],
      { nominator },
    );
    const out = fw.filterNodes(p, ['a', 'x', 'b'], lookup, unknown);
    assert.deepEqual(out.feasible, ['a', 'b']);
    assert.equal(out.failed.get('x'), 'unknown x');
  });

  it('passes every node when no plugin objects', () => {
    assert.deepEqual(new Framework([]).filterNodes(p, ['a', 'b', 'c'], lookup, unknown).feasible, ['a', 'b', 'c']);
  });
});

describe('scoreNodes', () => {
  it('maps the mean of 0..100 plugin scores to integers 0..10 and gives unknown nodes 0', () => {
    const scores: Record<string, number> = { a: 100, b: 44, c: 45 };
    const fw = new Framework([{ name: 's', score: (_s: CycleState, _p: Pod, info: NodeInfo) => scores[info.name] }]);
    assert.deepEqual(fw.scoreNodes(p, ['a', 'b', 'c', 'x'], lookup), [
      { host: 'a', score: 10 },
      { host: 'b', score: 4 },
      { host: 'c', score: 5 },
      { host: 'x', score: 0 },
    ]);
  });

  it('clamps out-of-range and non-finite plugin scores into 0..10', () => {
    const scores: Record<string, number> = { a: 250, b: -3, c: Number.NaN };
    const fw = new Framework([{ name: 's', score: (_s: CycleState, _p: Pod, info: NodeInfo) => scores[info.name] }]);
    assert.deepEqual(
      fw.scoreNodes(p, ['a', 'b', 'c'], lookup).map((s) => s.score),
      [10, 0, 0],
    );
  });

  it('scores 0 everywhere when there is no scorer or the scorer skipped the pod', () => {
    const skipping = new Framework([{ name: 's', preFilter: () => SKIP, score: () => 100 }]);
    assert.deepEqual(
      skipping.scoreNodes(p, ['a', 'b'], lookup).map((s) => s.score),
      [0, 0],
    );
    assert.deepEqual(
      new Framework([]).scoreNodes(p, ['a'], lookup).map((s) => s.score),
      [0],
    );
  });
  it('looks no node up when no scorer runs for the pod (every answer is 0 whatever the node)', () => {
    const looked: string[] = [];
    const counting = (name: string) => {
      looked.push(name);
      return lookup(name);
    };
    const skipping = new Framework([{ name: 's', preFilter: () => SKIP, score: () => 100 }]);
    assert.deepEqual(
      skipping.scoreNodes(p, ['a', 'x'], counting, (host, score) => `${host}=${score}`),
      ['a=0', 'x=0'],
    );
    assert.deepEqual(looked, []);
  });
});

describe('reserve and preBind', () => {
  it('unreserves every reserve plugin in reverse order when one fails', () => {
    const calls: string[] = [];
    const plugin = (name: string, ok: boolean): AnyPlugin => ({
      name,
      reserve: () => {
        calls.push(`reserve ${name}`);
        return ok ? SUCCESS : status('Unschedulable', `${name} lost the race`);
      },
      unreserve: () => {
        calls.push(`unreserve ${name}`);
      },
    });
    const fw = new Framework([plugin('one', true), plugin('two', false), plugin('three', true)]);
    const s = fw.runReserve(new CycleState(), p, 'a');
    assert.equal(s.code, 'Unschedulable');
    assert.equal(s.plugin, 'two');
    assert.deepEqual(calls, ['reserve one', 'reserve two', 'unreserve three', 'unreserve two', 'unreserve one']);
  });

  it('unreserves the remaining plugins when one unreserve throws, then rethrows its error', () => {
    const calls: string[] = [];
    const plugin = (name: string, broken: boolean): AnyPlugin => ({
      name,
      reserve: () => SUCCESS,
      unreserve: () => {
        calls.push(`unreserve ${name}`);
        if (broken) throw new Error(`${name} is broken`);
      },
    });
    const fw = new Framework([plugin('one', false), plugin('two', true), plugin('three', false)]);
    assert.throws(() => fw.runUnreserve(new CycleState(), p, 'a'), /two is broken/);
    assert.deepEqual(calls, ['unreserve three', 'unreserve two', 'unreserve one']);
  });

  it('turns a preBind that throws into an Error status naming the plugin', async () => {
    const fw = new Framework([
      {
        name: 'volumes',
        preBind: async () => {
          throw new Error('write refused');
        },
      },
    ]);
    const s = await fw.runPreBind(new CycleState(), p, 'a', new AbortController().signal);
    assert.equal(s.code, 'Error');
    assert.equal(s.plugin, 'volumes');
    assert.deepEqual(s.reasons, ['write refused']);
  });
});
