// kube-scheduler's FitError.Error() line, re-expressing upstream's TestFitError cases (framework/types_test.go).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fitErrorMessage } from '../../src/framework/fit-error.ts';
import { type Status, status } from '../../src/framework/interfaces.ts';

const times = (n: number, s: Status) => Array.from({ length: n }, () => s);

describe('FitError line', () => {
  it('nodes failed Prefilter plugin: the preFilter message alone, not repeated per node', () => {
    const pre = 'Node(s) failed PreFilter plugin FalsePreFilter';
    assert.equal(
      fitErrorMessage(3, pre, times(3, status('UnschedulableAndUnresolvable', pre))),
      '0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter.',
    );
  });

  it('nodes failed one Filter plugin: one counted reason', () => {
    const s = status('Unschedulable', 'Node(s) failed Filter plugin FalseFilter-1');
    assert.equal(
      fitErrorMessage(3, '', times(3, s)),
      '0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1.',
    );
  });

  it('nodes failed two Filter plugins: counted reasons sorted as strings', () => {
    const one = status('Unschedulable', 'Node(s) failed Filter plugin FalseFilter-1');
    const two = status('Unschedulable', 'Node(s) failed Filter plugin FalseFilter-2');
    assert.equal(
      fitErrorMessage(3, '', [one, one, two]),
      '0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2, 2 Node(s) failed Filter plugin FalseFilter-1.',
    );
  });

  it('every reason of a multi-reason status counts once per node', () => {
    const s = status(
      'UnschedulableAndUnresolvable',
      "node(s) didn't find available persistent volumes to bind",
      'node(s) did not have enough free storage',
    );
    assert.equal(
      fitErrorMessage(2, '', times(2, s)),
      "0/2 nodes are available: 2 node(s) did not have enough free storage, 2 node(s) didn't find available persistent volumes to bind.",
    );
  });

  it('counts sort bytewise, as Go sort.Strings: "10 ..." before "9 ..."', () => {
    const a = status('Unschedulable', 'node(s) exceed max volume count');
    const b = status('UnschedulableAndUnresolvable', 'node(s) had no available volume zone');
    assert.equal(
      fitErrorMessage(19, '', [...times(9, a), ...times(10, b)]),
      '0/19 nodes are available: 10 node(s) had no available volume zone, 9 node(s) exceed max volume count.',
    );
  });

  it('no nodes at all: the bare prefix', () => {
    assert.equal(fitErrorMessage(0, '', []), '0/0 nodes are available:');
  });
});
