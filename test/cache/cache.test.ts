import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { NodeInfoCache } from '../../src/cache/cache.ts';
import { ClusterStore } from '../../src/cluster/store.ts';
import { recordingLogger } from '../helpers/log.ts';
import { makeNode, makePod } from '../helpers/objects.ts';
import { withChanges } from './helpers.ts';

function cacheWithNodes(...names: string[]): NodeInfoCache {
  const cache = new NodeInfoCache();
  for (const n of names) cache.addNode(makeNode(n));
  return cache;
}

const cpu = (cache: NodeInfoCache, node: string) => cache.nodeInfo(node)?.requested.milliCPU;

describe('assume', () => {
  it('adds the pod to its node and marks it assumed', () => {
    const cache = cacheWithNodes('n1');
    cache.assumePod(makePod('p', { nodeName: 'n1', requests: { cpu: '1' } }));
    assert.equal(cache.isAssumed('uid-p'), true);
    assert.equal(cpu(cache, 'n1'), 1000);
    assert.equal(cache.nodeInfo('n1')?.pods.get('uid-p')?.assumed, true);
    assert.deepEqual(cache.assumedPods(), [
      { uid: 'uid-p', namespace: 'default', name: 'p', nodeName: 'n1', bindingFinished: false },
    ]);
  });

  it('fails for a UID already in the cache, assumed or added, and changes nothing', () => {
    const cache = cacheWithNodes('n1', 'n2');
    cache.assumePod(makePod('p', { nodeName: 'n1', requests: { cpu: '1' } }));
    assert.throws(() => cache.assumePod(makePod('p', { nodeName: 'n2' })), /is in the cache, so can't be assumed/);
    cache.addPod(makePod('q', { nodeName: 'n1' }));
    assert.throws(() => cache.assumePod(makePod('q', { nodeName: 'n1' })), /can't be assumed/);
    assert.equal(cpu(cache, 'n1'), 1000);
    assert.equal(cache.nodeInfo('n2')?.pods.size, 0);
  });

  it('fails for a pod without spec.nodeName', () => {
    assert.throws(() => cacheWithNodes('n1').assumePod(makePod('p')), /no spec.nodeName/);
  });

  it('finishBinding records when our bind finished, and ignores pods that are not assumed', () => {
    let now = 1000;
    const cache = new NodeInfoCache({ now: () => now });
    cache.assumePod(makePod('p', { nodeName: 'n1' }));
    now = 5000;
    cache.finishBinding(makePod('p', { nodeName: 'n1' }));
    cache.finishBinding(makePod('unknown', { nodeName: 'n1' }));
    assert.deepEqual(cache.assumedPods()[0], {
      uid: 'uid-p',
      namespace: 'default',
      name: 'p',
      nodeName: 'n1',
      bindingFinished: true,
      finishedAt: 5000,
    });
  });
});

describe('forget', () => {
  it('drops an assumed pod and its usage', () => {
    const cache = cacheWithNodes('n1');
    const pod = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    cache.assumePod(pod);
    cache.forgetPod(pod);
    assert.equal(cache.podCount(), 0);
    assert.equal(cpu(cache, 'n1'), 0);
    assert.equal(cache.isAssumed('uid-p'), false);
  });

  it('takes the finish time of our bind with it: the same pod assumed again is not finished', () => {
    const cache = cacheWithNodes('n1');
    const pod = makePod('p', { nodeName: 'n1' });
    cache.assumePod(pod);
    cache.finishBinding(pod);
    cache.forgetPod(pod);
    cache.assumePod(pod);
    assert.deepEqual(cache.assumedPods(), [
      { uid: 'uid-p', namespace: 'default', name: 'p', nodeName: 'n1', bindingFinished: false },
    ]);
  });

  it('is a no-op for a pod the cache does not hold', () => {
    const cache = cacheWithNodes('n1');
    cache.forgetPod(makePod('p', { nodeName: 'n1' }));
    assert.equal(cache.podCount(), 0);
  });

  it('fails for an added pod, which the watch owns', () => {
    const cache = cacheWithNodes('n1');
    cache.addPod(makePod('p', { nodeName: 'n1' }));
    assert.throws(() => cache.forgetPod(makePod('p', { nodeName: 'n1' })), /is not assumed, so it cannot be forgotten/);
    assert.equal(cache.podCount(), 1);
  });

  it('fails when the pod is assumed on another node than the one given', () => {
    const cache = cacheWithNodes('n1', 'n2');
    cache.assumePod(makePod('p', { nodeName: 'n1' }));
    assert.throws(() => cache.forgetPod(makePod('p', { nodeName: 'n2' })), /was assumed on n2 but assigned to n1/);
    assert.equal(cache.isAssumed('uid-p'), true);
  });
});

describe('add', () => {
  it('confirms an assumed pod on the same node, with the object the watch carries', () => {
    const cache = cacheWithNodes('n1');
    cache.assumePod(makePod('p', { nodeName: 'n1', requests: { cpu: '1' } }));
    const seen = makePod('p', { nodeName: 'n1', requests: { cpu: '2' } });
    cache.addPod(seen);
    assert.equal(cache.isAssumed('uid-p'), false);
    assert.equal(cache.getPod('uid-p'), seen);
    assert.equal(cpu(cache, 'n1'), 2000);
    assert.equal(cache.nodeInfo('n1')?.pods.get('uid-p')?.assumed, false);
  });

  it('moves an assumed pod that was confirmed on another node than assumed, and says so', () => {
    const logger = recordingLogger();
    const lines = logger.records;
    const cache = new NodeInfoCache({ logger });
    cache.addNode(makeNode('n1'));
    cache.addNode(makeNode('n2'));
    cache.assumePod(makePod('p', { nodeName: 'n1', requests: { cpu: '1' } }));
    cache.addPod(makePod('p', { nodeName: 'n2', requests: { cpu: '1' } }));
    assert.equal(cpu(cache, 'n1'), 0);
    assert.equal(cpu(cache, 'n2'), 1000);
    assert.equal(cache.podCount(), 1);
    assert.ok(lines.some((l) => l.msg === 'Pod was added to a different node than it was assumed'));
  });

  it('adds a pod the cache has never seen (bound by someone else)', () => {
    const cache = cacheWithNodes('n1');
    cache.addPod(makePod('p', { nodeName: 'n1', requests: { cpu: '1' } }));
    assert.equal(cpu(cache, 'n1'), 1000);
    assert.equal(cache.isAssumed('uid-p'), false);
  });

  it('fails for a pod already added and changes nothing', () => {
    const cache = cacheWithNodes('n1');
    cache.addPod(makePod('p', { nodeName: 'n1', requests: { cpu: '1' } }));
    assert.throws(
      () => cache.addPod(makePod('p', { nodeName: 'n1', requests: { cpu: '3' } })),
      /already in added state/,
    );
    assert.equal(cpu(cache, 'n1'), 1000);
  });

  it('creates a NodeInfo without a node for a pod whose node the cache has not seen yet', () => {
    const cache = new NodeInfoCache();
    cache.addPod(makePod('p', { nodeName: 'later' }));
    assert.equal(cache.nodeInfo('later')?.node, undefined);
    assert.deepEqual(cache.nodeNames(), []);
    cache.addNode(makeNode('later'));
    assert.deepEqual(cache.nodeNames(), ['later']);
    assert.equal(cache.nodeInfo('later')?.pods.size, 1);
  });
});

describe('update', () => {
  it('replaces an added pod’s usage with the new object’s', () => {
    const cache = cacheWithNodes('n1');
    const old = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    cache.addPod(old);
    const next = withChanges(old, { requests: { cpu: '3' }, containers: undefined });
    cache.updatePod(old, next);
    assert.equal(cpu(cache, 'n1'), 3000);
    assert.equal(cache.getPod('uid-p'), next);
  });

  it('fails for a pod the cache does not hold', () => {
    const cache = cacheWithNodes('n1');
    const p = makePod('p', { nodeName: 'n1' });
    assert.throws(() => cache.updatePod(p, p), /is not added to scheduler cache, so cannot be updated/);
  });

  it('fails for an assumed pod: only the watch’s add confirms it', () => {
    const cache = cacheWithNodes('n1');
    const p = makePod('p', { nodeName: 'n1' });
    cache.assumePod(p);
    assert.throws(() => cache.updatePod(p, p), /assumed pod .* should not be updated/);
    assert.equal(cache.isAssumed('uid-p'), true);
  });

  it('that changes the node logs the corruption loudly and repairs from the new object instead of exiting', () => {
    const logger = recordingLogger();
    const lines = logger.records;
    const cache = new NodeInfoCache({ logger });
    cache.addNode(makeNode('n1'));
    cache.addNode(makeNode('n2'));
    const old = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    cache.addPod(old);
    cache.updatePod(old, withChanges(old, { nodeName: 'n2' }));
    assert.equal(cpu(cache, 'n1'), 0);
    assert.equal(cpu(cache, 'n2'), 1000);
    assert.ok(lines.some((l) => l.level === 'error' && /corrupted/.test(l.msg)));
  });
});

describe('malformed objects', () => {
  it('a pod without a containers list still counts as a pod and leaves no stray node entry', () => {
    const cache = new NodeInfoCache();
    const pod = makePod('p', { nodeName: 'n1' });
    (pod.spec as { containers?: unknown }).containers = undefined;
    cache.addPod(pod);
    assert.equal(cache.nodeInfo('n1')?.requested.pods, 1);
    cache.removePod(pod);
    assert.equal(cache.nodeCount(), 0);
  });
});

describe('remove', () => {
  it('subtracts an added pod and forgets it', () => {
    const cache = cacheWithNodes('n1');
    const p = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    cache.addPod(p);
    cache.removePod(p);
    assert.equal(cache.podCount(), 0);
    assert.equal(cpu(cache, 'n1'), 0);
  });

  it('also removes an assumed pod (deleted before the watch confirmed it)', () => {
    const cache = cacheWithNodes('n1');
    const p = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    cache.assumePod(p);
    cache.removePod(p);
    assert.equal(cache.podCount(), 0);
    assert.equal(cache.assumedPods().length, 0);
    assert.equal(cpu(cache, 'n1'), 0);
  });

  it('fails for a pod the cache does not hold', () => {
    assert.throws(
      () => cacheWithNodes('n1').removePod(makePod('p', { nodeName: 'n1' })),
      /not found in scheduler cache/,
    );
  });

  it('removes from the node the cache has the pod on, even if the event names another one', () => {
    const logger = recordingLogger();
    const lines = logger.records;
    const cache = new NodeInfoCache({ logger });
    cache.addNode(makeNode('n1'));
    cache.addPod(makePod('p', { nodeName: 'n1', requests: { cpu: '1' } }));
    cache.removePod(makePod('p', { nodeName: 'n2' }));
    assert.equal(cpu(cache, 'n1'), 0);
    assert.ok(lines.some((l) => l.level === 'error'));
  });

  it('accepts the last known state without a node name (missed delete) quietly', () => {
    const logger = recordingLogger();
    const lines = logger.records;
    const cache = new NodeInfoCache({ logger });
    cache.addPod(makePod('p', { nodeName: 'n1' }));
    cache.removePod(makePod('p'));
    assert.equal(cache.podCount(), 0);
    assert.equal(lines.length, 0);
  });
});

describe('nodes', () => {
  it('a removed node with pods stays as a ghost, unlisted, until its last pod goes', () => {
    const cache = cacheWithNodes('n1', 'n2');
    const p = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    cache.addPod(p);
    cache.removeNode(makeNode('n1'));
    assert.deepEqual(cache.nodeNames(), ['n2']);
    assert.equal(cache.nodeInfo('n1')?.node, undefined);
    assert.equal(cpu(cache, 'n1'), 1000);
    assert.equal(cache.nodeCount(), 2);
    cache.removePod(p);
    assert.equal(cache.nodeInfo('n1'), undefined);
    assert.equal(cache.nodeCount(), 1);
  });

  it('a ghost node that comes back keeps its pods', () => {
    const cache = cacheWithNodes('n1');
    cache.addPod(makePod('p', { nodeName: 'n1', requests: { cpu: '1' } }));
    cache.removeNode(makeNode('n1'));
    cache.addNode(makeNode('n1'));
    assert.deepEqual(cache.nodeNames(), ['n1']);
    assert.equal(cpu(cache, 'n1'), 1000);
  });

  it('removing a node without pods forgets it entirely', () => {
    const cache = cacheWithNodes('n1');
    cache.removeNode(makeNode('n1'));
    assert.equal(cache.nodeInfo('n1'), undefined);
    assert.equal(cache.nodeCount(), 0);
  });

  it('removing an unknown node fails', () => {
    assert.throws(() => new NodeInfoCache().removeNode(makeNode('x')), /node x is not found/);
  });

  it('an update refreshes allocatable and moves the node in the tree when its zone changes', () => {
    const cache = new NodeInfoCache();
    cache.addNode(makeNode('a', { zone: 'z1' }));
    cache.addNode(makeNode('b', { zone: 'z1' }));
    cache.addNode(makeNode('c', { zone: 'z2' }));
    assert.deepEqual(cache.nodeNames(), ['a', 'c', 'b']);
    cache.updateNode(makeNode('a', { zone: 'z1' }), makeNode('a', { zone: 'z2', allocatable: { cpu: '1' } }));
    assert.deepEqual(cache.nodeNames(), ['b', 'c', 'a']);
    assert.equal(cache.nodeInfo('a')?.allocatable.milliCPU, 1000);
  });

  it('the cache generation grows with every change', () => {
    const cache = new NodeInfoCache();
    const gens = [cache.generation()];
    cache.addNode(makeNode('n1'));
    gens.push(cache.generation());
    cache.assumePod(makePod('p', { nodeName: 'n1' }));
    gens.push(cache.generation());
    cache.forgetPod(makePod('p', { nodeName: 'n1' }));
    gens.push(cache.generation());
    cache.removeNode(makeNode('n1'));
    gens.push(cache.generation());
    for (let i = 1; i < gens.length; i++) assert.ok(gens[i] > gens[i - 1]);
  });
});

describe('fed by the cluster store', () => {
  function attached() {
    const logger = recordingLogger();
    const lines = logger.records;
    const store = new ClusterStore();
    const cache = new NodeInfoCache({ logger });
    cache.attach(store);
    return { store, cache, lines };
  }

  it('replays what the store already holds when attached', () => {
    const store = new ClusterStore();
    store.upsert('Node', makeNode('n1'));
    store.upsert('Pod', makePod('p', { nodeName: 'n1', requests: { cpu: '1' } }));
    store.upsert('Pod', makePod('pending'));
    const cache = new NodeInfoCache();
    cache.attach(store);
    assert.deepEqual(cache.nodeNames(), ['n1']);
    assert.equal(cache.podCount(), 1);
    assert.equal(cpu(cache, 'n1'), 1000);
  });

  it('ignores pending pods and adds a pod when an update gives it a node', () => {
    const { store, cache } = attached();
    store.upsert('Node', makeNode('n1'));
    const pending = makePod('p', { requests: { cpu: '1' } });
    store.upsert('Pod', pending);
    assert.equal(cache.podCount(), 0);
    store.upsert('Pod', withChanges(pending, { nodeName: 'n1', requests: { cpu: '1' }, containers: undefined }));
    assert.equal(cpu(cache, 'n1'), 1000);
  });

  it('confirms our assumed pod when the watch brings it bound', () => {
    const { store, cache } = attached();
    store.upsert('Node', makeNode('n1'));
    const pending = makePod('p');
    store.upsert('Pod', pending);
    cache.assumePod(withChanges(pending, { nodeName: 'n1' }));
    store.upsert('Pod', withChanges(pending, { nodeName: 'n1' }));
    assert.equal(cache.isAssumed('uid-p'), false);
    assert.equal(cache.podCount(), 1);
  });

  it('leaves our assumed pod alone while the watch only shows the pending pod changing', () => {
    const { store, cache } = attached();
    store.upsert('Node', makeNode('n1'));
    const pending = makePod('p', { requests: { cpu: '1' } });
    store.upsert('Pod', pending);
    cache.assumePod(withChanges(pending, { nodeName: 'n1', requests: { cpu: '1' }, containers: undefined }));
    store.upsert('Pod', withChanges(pending, { requests: { cpu: '1' }, containers: undefined }));
    assert.equal(cache.isAssumed('uid-p'), true);
    assert.equal(cpu(cache, 'n1'), 1000);
  });

  it('drops an assumed pod when the watch shows it deleted or finished', () => {
    const { store, cache } = attached();
    store.upsert('Node', makeNode('n1'));
    const a = makePod('a');
    const b = makePod('b');
    store.upsert('Pod', a);
    store.upsert('Pod', b);
    cache.assumePod(withChanges(a, { nodeName: 'n1' }));
    cache.assumePod(withChanges(b, { nodeName: 'n1' }));
    store.delete('Pod', a);
    store.upsert('Pod', withChanges(b, { nodeName: 'n1', phase: 'Succeeded' }));
    assert.equal(cache.podCount(), 0);
  });

  it('does not count pods that reached Succeeded or Failed: they leave the cache', () => {
    const { store, cache } = attached();
    store.upsert('Node', makeNode('n1'));
    const p = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    store.upsert('Pod', p);
    store.upsert('Pod', withChanges(p, { phase: 'Succeeded' }));
    assert.equal(cache.podCount(), 0);
    store.upsert('Pod', makePod('done', { nodeName: 'n1', phase: 'Failed' }));
    assert.equal(cache.podCount(), 0);
    store.delete('Pod', p);
    assert.equal(cache.podCount(), 0);
  });

  it('treats an update that changes the UID as delete of the old pod and add of the new one', () => {
    const { store, cache } = attached();
    store.upsert('Node', makeNode('n1'));
    store.upsert('Pod', makePod('p', { nodeName: 'n1', uid: 'old', requests: { cpu: '1' } }));
    store.upsert('Pod', makePod('p', { nodeName: 'n1', uid: 'new', resourceVersion: '2', requests: { cpu: '2' } }));
    assert.equal(cache.getPod('old'), undefined);
    assert.ok(cache.getPod('new'));
    assert.equal(cpu(cache, 'n1'), 2000);
  });

  it('repairs a node change seen by the watch, logging it as corruption, without throwing', () => {
    const { store, cache, lines } = attached();
    store.upsert('Node', makeNode('n1'));
    store.upsert('Node', makeNode('n2'));
    const p = makePod('p', { nodeName: 'n1', requests: { cpu: '1' } });
    store.upsert('Pod', p);
    store.upsert('Pod', withChanges(p, { nodeName: 'n2' }));
    assert.equal(cpu(cache, 'n1'), 0);
    assert.equal(cpu(cache, 'n2'), 1000);
    assert.ok(lines.some((l) => l.level === 'error' && /corrupted/.test(l.msg)));
  });

  it('turns a node deletion into a ghost and a pod deletion into its removal', () => {
    const { store, cache } = attached();
    store.upsert('Node', makeNode('n1'));
    const p = makePod('p', { nodeName: 'n1' });
    store.upsert('Pod', p);
    store.delete('Node', makeNode('n1'));
    assert.deepEqual(cache.nodeNames(), []);
    assert.equal(cache.nodeInfo('n1')?.pods.size, 1);
    store.delete('Pod', p);
    assert.equal(cache.nodeCount(), 0);
  });

  it('stops listening once detached', () => {
    const store = new ClusterStore();
    const cache = new NodeInfoCache();
    const detach = cache.attach(store);
    detach();
    store.upsert('Node', makeNode('n1'));
    assert.equal(cache.nodeCount(), 0);
  });
});

describe('logging', () => {
  it('accepts a pino logger as is', () => {
    const cache = new NodeInfoCache({ logger: pino({ level: 'silent' }) });
    cache.addPod(makePod('p', { nodeName: 'n1' }));
    cache.removePod(makePod('p', { nodeName: 'elsewhere' }));
    assert.equal(cache.podCount(), 0);
  });
});
