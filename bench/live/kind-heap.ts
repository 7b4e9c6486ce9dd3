// Heap bytes per trimmed object of each kind the store holds most of: every object of a cluster-state JSON List (e.g.
// one bench/ready-memory.ts --file wrote) parsed, then trimmed as the loader trims it, one kind at a time, with full GCs
// around each. Objects a kind shares (interned strings, pooled parts) count towards the kind that first held them.
// Run: ./node_modules/.bin/node bench/live/kind-heap.ts FILE

import { streamJsonList } from '../../src/cluster/state-file/json-list.ts';
import { normalizeObject } from '../../src/cluster/state-file/normalize.ts';
import type { Json } from '../../src/cluster/state-file/validate.ts';
import { trimObject } from '../../src/cluster/trim.ts';
import type { AnyObject, Kind } from '../../src/cluster/types.ts';
import { collectGarbage } from './memory.ts';

const KINDS: Kind[] = ['Pod', 'PersistentVolume', 'PersistentVolumeClaim', 'CSIStorageCapacity', 'Node', 'CSINode'];

export async function measureKindHeap(file: string): Promise<{ kind: Kind; objects: number; bytesEach: number }[]> {
  const raw = new Map<string, Json[]>();
  await streamJsonList(file, (item) => {
    const kind = (item as { kind: string }).kind;
    if (!raw.has(kind)) raw.set(kind, []);
    raw.get(kind)!.push(item as Json);
  });
  const kept: AnyObject[][] = [];
  const out = [];
  for (const kind of KINDS) {
    const items = raw.get(kind) ?? [];
    const before = collectGarbage();
    kept.push(items.map((o) => trimObject(kind, normalizeObject(kind, o))));
    const bytes = collectGarbage() - before;
    out.push({ kind, objects: items.length, bytesEach: items.length ? Math.round(bytes / items.length) : 0 });
  }
  return out;
}

if (import.meta.main) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: bench/live/kind-heap.ts FILE');
  for (const { kind, objects, bytesEach } of await measureKindHeap(file))
    console.log(`${kind}: ${objects.toLocaleString('en')} objects, ${bytesEach} B each trimmed`);
}
