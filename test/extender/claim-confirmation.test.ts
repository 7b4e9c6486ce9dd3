// filter re-reads the claims of a pod that fits nowhere (confirmClaimsOfRejection): a claim that changed for a verdict
// answers an Error (kube-scheduler retries after its backoff); one that changed only where no verdict reads (its
// resourceVersion, its status conditions: the PVC protection controller's Unused, written whenever a pod using it
// comes or goes) leaves the answer as it was.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { PersistentVolumeClaim } from '../../src/cluster/types.ts';
import type { ExtenderDeps } from '../../src/extender/deps.ts';
import { confirmClaimsOfRejection } from '../../src/extender/filter.ts';
import type { ExtenderFilterResult } from '../../src/extender/wire.ts';
import { claim, pod } from '../helpers/objects.ts';

const REJECTED: ExtenderFilterResult = {
  Nodes: null,
  NodeNames: [],
  FailedNodes: {},
  FailedAndUnresolvableNodes: { 'node-a': "node(s) didn't match PersistentVolume's node affinity" },
  Error: '',
};

function confirm(seen: PersistentVolumeClaim, live: PersistentVolumeClaim) {
  const deps = {
    store: { get: () => seen },
    writer: { getPersistentVolumeClaim: async () => live },
    logger: pino({ level: 'silent' }),
  } as unknown as ExtenderDeps;
  return confirmClaimsOfRejection(
    { Pod: pod('web', { claims: ['data'] }), NodeNames: ['node-a'] } as never,
    REJECTED,
    deps,
  );
}

const seen = claim('data', { volumeName: 'pv-a' });
const at = (rv: string, c: PersistentVolumeClaim): PersistentVolumeClaim => ({
  ...c,
  metadata: { ...c.metadata, resourceVersion: rv },
});

describe("filter's second look at a rejected pod's claims", () => {
  it('a claim whose only change is its Unused condition: the rejection stands', async () => {
    const live = at('2', {
      ...seen,
      status: { ...seen.status, conditions: [{ type: 'Unused', status: 'False', reason: 'PodUsingPVC' }] },
    });
    assert.deepEqual(await confirm(seen, live), REJECTED);
  });

  it('a claim bound to another volume meanwhile: an Error, retried after the backoff', async () => {
    const live = at('2', { ...seen, spec: { ...seen.spec, volumeName: 'pv-b' } });
    const answer = await confirm(seen, live);
    assert.match(
      answer.Error,
      /persistentvolumeclaim "default\/data" changed since the extender saw it \(resourceVersion 1, now 2\)/,
    );
  });
});
