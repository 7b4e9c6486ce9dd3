// Explain and simulate over a cluster built in memory: a private store, cache and the default volume plugins.
import type { AnyObject, Kind } from '../../src/cluster/types.ts';
import { defaultSettings } from '../../src/config.ts';
import { whatIf } from '../../src/ops/what-if.ts';

export function cluster(objects: readonly AnyObject[]) {
  const byKind = (kind: Kind) => objects.filter((o) => o.kind === kind);
  return whatIf(byKind, defaultSettings());
}
