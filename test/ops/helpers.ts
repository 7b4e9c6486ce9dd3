// Explain and simulate over a cluster built in memory: a private store, cache and the default volume plugins.
import type { AnyObject, Kind } from '../../src/cluster/types.ts';
import { defaultSettings } from '../../src/config.ts';
import { whatIf } from '../../src/ops/what-if.ts';

/** Objects as a source delivers them: every one with a resourceVersion (a parsed file may carry none). */
export function cluster(objects: readonly AnyObject[]) {
  const versioned = objects.map((o) =>
    o.metadata.resourceVersion ? o : { ...o, metadata: { ...o.metadata, resourceVersion: '1' } },
  );
  const byKind = (kind: Kind) => versioned.filter((o) => o.kind === kind);
  return whatIf(byKind, defaultSettings());
}
