// The binding-decision cache: valid only at the generation it was computed at, one generation per pod, bounded.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { DecisionCache } from '../../src/volumes/decisions.ts';

const empty = () => ({ podVolumes: { staticBindings: [], dynamicProvisions: [] }, score: undefined });

it('a decision is returned only for the generation it was computed at', () => {
  const cache = new DecisionCache();
  const d = empty();
  cache.remember('pod', 'n1', 7, d);
  assert.equal(cache.get('pod', 'n1', 7), d.podVolumes);
  assert.equal(cache.get('pod', 'n1', 8), undefined);
  assert.equal(cache.get('pod', 'n2', 7), undefined);
});

it('a newer generation replaces every older decision of the pod', () => {
  const cache = new DecisionCache();
  cache.remember('pod', 'n1', 1, empty());
  cache.remember('pod', 'n2', 2, empty());
  assert.equal(cache.get('pod', 'n1', 1), undefined);
  assert.ok(cache.get('pod', 'n2', 2));
});

it('the oldest pod is dropped when the cache is full; forgetPod drops one', () => {
  const cache = new DecisionCache(2);
  cache.remember('a', 'n', 1, empty());
  cache.remember('b', 'n', 1, empty());
  cache.remember('c', 'n', 1, empty());
  assert.equal(cache.podCount, 2);
  assert.equal(cache.get('a', 'n', 1), undefined);
  cache.forgetPod('b');
  assert.equal(cache.get('b', 'n', 1), undefined);
});

it('a decision kept for its score alone has no volumes to give', () => {
  const cache = new DecisionCache();
  cache.remember('pod', 'n1', 1, { podVolumes: undefined, score: 7 });
  assert.equal(cache.get('pod', 'n1', 1), undefined);
  assert.equal(cache.decision('pod', 'n1', 1)?.score, 7);
});
