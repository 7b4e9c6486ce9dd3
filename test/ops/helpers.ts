// Explain and simulate over a cluster built in memory: a private store, cache and the default volume plugins.
import { readFileSync } from 'node:fs';
import { parseClusterState } from '../../src/cluster/state-file/parse.ts';
import type { AnyObject, Kind } from '../../src/cluster/types.ts';
import { defaultSettings, type Settings } from '../../src/config.ts';
import { whatIf } from '../../src/ops/what-if.ts';

/** Objects as a source delivers them: every one with a resourceVersion (a parsed file may carry none). */
export function cluster(objects: readonly AnyObject[], settings: Partial<Settings> = {}) {
  const versioned = objects.map((o) =>
    o.metadata.resourceVersion ? o : { ...o, metadata: { ...o.metadata, resourceVersion: '1' } },
  );
  const byKind = (kind: Kind) => versioned.filter((o) => o.kind === kind);
  return whatIf(byKind, { ...defaultSettings(), ...settings });
}

/** examples/cluster.yaml as the file loader keeps it (trimmed, so without `kind`, which `cluster` groups by). */
export function exampleObjects(): AnyObject[] {
  const file = 'examples/cluster.yaml';
  const { objects } = parseClusterState(readFileSync(file, 'utf8'), file);
  return [...objects].flatMap(([kind, list]) => list.map((o) => ({ ...o, kind }) as AnyObject));
}
