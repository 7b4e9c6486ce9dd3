// In-tree → CSI translation of what scheduling reads (csi-translation-lib in_tree_volume_test / plugin tests).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PersistentVolume } from '../../src/cluster/types.ts';
import { pvForNode, translateInTreePVToCSI } from '../../src/volumes/csi-migration.ts';
import { pvNodeAffinityMatches } from '../../src/volumes/node-affinity.ts';
import { makeCSINode } from './fixtures.ts';

const inTree = (
  source: Record<string, unknown>,
  labels?: Record<string, string>,
  terms?: { key: string; values: string[] }[][],
): PersistentVolume => ({
  metadata: { name: 'pv', uid: 'pv', resourceVersion: '1', ...(labels ? { labels } : {}) },
  spec: {
    ...source,
    ...(terms
      ? {
          nodeAffinity: {
            required: {
              nodeSelectorTerms: terms.map((t) => ({ matchExpressions: t.map((e) => ({ ...e, operator: 'In' })) })),
            },
          },
        }
      : {}),
  },
});
const affinityKeys = (pv: PersistentVolume) =>
  pv.spec.nodeAffinity?.required?.nodeSelectorTerms.map((t) =>
    (t.matchExpressions ?? []).map((e) => `${e.key}=${e.values?.join('|')}`),
  );

describe('translateTopologyFromInTreeToCSI', () => {
  it('AWS EBS: GA zone requirement moves to topology.ebs.csi.aws.com/zone', () => {
    const pv = translateInTreePVToCSI(
      inTree({ awsElasticBlockStore: { volumeID: 'aws://us-east-1a/vol-1' } }, undefined, [
        [{ key: 'topology.kubernetes.io/zone', values: ['us-east-1a'] }],
      ]),
    )!;
    assert.deepEqual(pv.spec.csi, { driver: 'ebs.csi.aws.com', volumeHandle: 'vol-1' });
    assert.deepEqual(affinityKeys(pv), [['topology.ebs.csi.aws.com/zone=us-east-1a']]);
  });

  it('GCE PD: zone labels (regional "a__b") become an In requirement on topology.gke.io/zone', () => {
    const pv = translateInTreePVToCSI(
      inTree({ gcePersistentDisk: { pdName: 'd' } }, { 'topology.kubernetes.io/zone': 'us-b__us-a' }),
    )!;
    assert.equal(pv.spec.csi?.driver, 'pd.csi.storage.gke.io');
    assert.deepEqual(affinityKeys(pv), [['topology.gke.io/zone=us-a|us-b']]);
  });

  it('beta zone in affinity is replaced; beta region becomes the GA region', () => {
    const pv = translateInTreePVToCSI(
      inTree({ gcePersistentDisk: { pdName: 'd' } }, undefined, [
        [
          { key: 'failure-domain.beta.kubernetes.io/zone', values: ['z1'] },
          { key: 'failure-domain.beta.kubernetes.io/region', values: ['r1'] },
        ],
      ]),
    )!;
    assert.deepEqual(affinityKeys(pv), [['topology.gke.io/zone=z1', 'topology.kubernetes.io/region=r1']]);
  });

  it('zone labels are appended to every existing term', () => {
    const pv = translateInTreePVToCSI(
      inTree({ awsElasticBlockStore: { volumeID: 'vol-2' } }, { 'failure-domain.beta.kubernetes.io/zone': 'z1' }, [
        [{ key: 'other', values: ['x'] }],
        [{ key: 'other', values: ['y'] }],
      ]),
    )!;
    assert.deepEqual(affinityKeys(pv), [
      ['other=x', 'topology.ebs.csi.aws.com/zone=z1'],
      ['other=y', 'topology.ebs.csi.aws.com/zone=z1'],
    ]);
  });

  it('Azure Disk: source translated, topology left as it is (as upstream)', () => {
    const original = inTree({ azureDisk: { diskName: 'd', diskURI: '/subscriptions/s/disks/d' } }, undefined, [
      [{ key: 'topology.kubernetes.io/zone', values: ['z1'] }],
    ]);
    const pv = translateInTreePVToCSI(original)!;
    assert.deepEqual(pv.spec.csi, { driver: 'disk.csi.azure.com', volumeHandle: '/subscriptions/s/disks/d' });
    assert.deepEqual(affinityKeys(pv), [['topology.kubernetes.io/zone=z1']]);
  });

  it('translation applies only on nodes whose CSINode lists the plugin as migrated', () => {
    const pv = inTree(
      { gcePersistentDisk: { pdName: 'd' } },
      { 'failure-domain.beta.kubernetes.io/zone': 'us-east-1' },
    );
    const csiLabels = { 'topology.gke.io/zone': 'us-east-1' };
    assert.equal(pvNodeAffinityMatches(pvForNode(pv, makeCSINode('n', 'kubernetes.io/gce-pd')), csiLabels), true);
    assert.equal(
      pvNodeAffinityMatches(pvForNode(pv, makeCSINode('n', 'kubernetes.io/gce-pd')), { 'topology.gke.io/zone': 'x' }),
      false,
    );
    assert.equal(pvForNode(pv, makeCSINode('n', '')), pv);
    assert.equal(pvForNode(pv, undefined), pv);
  });
});
