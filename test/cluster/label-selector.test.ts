// metav1.LabelSelector evaluation, shared by PV claim selectors, CSIStorageCapacity topology and the volume controller.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchLabelSelector, SelectorError, selectorMatchesSafely } from '../../src/cluster/label-selector.ts';

const labels = { zone: 'a', tier: 'db' };

describe('label selectors', () => {
  it('an empty selector matches everything', () => {
    assert.equal(matchLabelSelector({}, labels), true);
    assert.equal(matchLabelSelector({}, undefined), true);
  });

  it('matchLabels and matchExpressions must all hold', () => {
    assert.equal(matchLabelSelector({ matchLabels: { zone: 'a' } }, labels), true);
    assert.equal(matchLabelSelector({ matchLabels: { zone: 'a', tier: 'web' } }, labels), false);
    const expr = (operator: string, values?: string[]) => ({ matchExpressions: [{ key: 'tier', operator, values }] });
    assert.equal(matchLabelSelector(expr('In', ['db', 'web']), labels), true);
    assert.equal(matchLabelSelector(expr('NotIn', ['db']), labels), false);
    assert.equal(matchLabelSelector(expr('Exists'), labels), true);
    assert.equal(matchLabelSelector(expr('DoesNotExist'), labels), false);
    assert.equal(
      matchLabelSelector({ matchExpressions: [{ key: 'gpu', operator: 'NotIn', values: ['x'] }] }, labels),
      true,
    );
  });

  it('rejects invalid selectors as apimachinery does, and the safe form treats them as no match', () => {
    const empty = { matchExpressions: [{ key: 'tier', operator: 'In', values: [] }] };
    assert.throws(() => matchLabelSelector(empty, labels), SelectorError);
    assert.throws(
      () => matchLabelSelector({ matchExpressions: [{ key: 'tier', operator: 'Near' }] }, labels),
      /not a valid/,
    );
    assert.equal(selectorMatchesSafely(empty, labels), false);
  });
});
