// The binder remembers its last StorageClass and CSIDriver answers per generation; after any sequence of store
// changes and lookups it must answer exactly what the store holds.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { makeCSIDriver, makeStorageClass } from '../helpers/objects.ts';
import { TestCluster } from './fixtures.ts';

const NAMES = ['a', 'b', 'c'];

const step = fc.record({
  op: fc.constantFrom('add', 'remove', 'lookup'),
  kind: fc.constantFrom('StorageClass', 'CSIDriver'),
  name: fc.constantFrom(...NAMES),
  capacity: fc.boolean(),
});

describe('binder class and driver lookups', () => {
  it('answer what the store holds after any sequence of changes', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const cluster = new TestCluster();
        const binder = cluster.binder();
        try {
          for (const s of steps) {
            const obj =
              s.kind === 'StorageClass'
                ? makeStorageClass(s.name, { provisioner: s.capacity ? 'p1' : 'p2' })
                : makeCSIDriver(s.name, { storageCapacity: s.capacity });
            if (s.op === 'add') cluster.add(obj);
            else if (s.op === 'remove') {
              if (cluster.store.get(s.kind, s.name)) cluster.remove(obj);
            }
            // One name per step, so the remembered answer is often the one a change just made stale.
            assert.equal(binder.storageClass(s.name), cluster.store.get('StorageClass', s.name));
            assert.equal(binder.csiDriver(s.name), cluster.store.get('CSIDriver', s.name));
          }
        } finally {
          binder.close();
        }
      }),
    );
  });
});
