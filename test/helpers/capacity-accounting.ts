// Which capacity accounting the shared fixtures build binders and extenders with: the product default (joint)
// unless TEST_CAPACITY_ACCOUNTING says otherwise. test/upstream-mode/ re-runs upstream's tables with `upstream`,
// each file in its own process, so both modes run every table.
import type { CapacityAccountingMode } from '../../src/volumes/provisioning.ts';

export function capacityAccountingUnderTest(): CapacityAccountingMode {
  const mode = process.env.TEST_CAPACITY_ACCOUNTING ?? 'joint';
  if (mode !== 'joint' && mode !== 'upstream') {
    throw new Error(`TEST_CAPACITY_ACCOUNTING must be joint or upstream, not ${JSON.stringify(mode)}`);
  }
  return mode;
}
