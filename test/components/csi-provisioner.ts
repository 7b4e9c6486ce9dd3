// A stand-in for a CSI driver's external-provisioner, which needs a CSI driver (a gRPC plugin on a node) that no
// process here can be: for a claim whose class names a CSI provisioner, once the PV controller handed it over
// (annotation volume.kubernetes.io/storage-provisioner) and a scheduler chose its node (selected-node), it creates a
// PV reachable where the node's CSINode topology keys say, pre-bound to the claim as the real one does. The real PV
// controller then binds the claim. A test can hold it back for a claim (a slow or failed provisioner).
import type { KubeApi, KubeObject } from './kube-api.ts';

const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';

type Claim = KubeObject & {
  metadata: { uid: string; namespace: string; annotations?: Record<string, string> };
  spec: { volumeName?: string; storageClassName?: string; resources?: { requests?: { storage?: string } } };
};

export interface CsiProvisioner {
  /** Names of the PVs it created, in order. */
  provisioned: string[];
  /** Leaves the claim (namespace/name) alone until the returned release. */
  hold(claim: string): () => void;
  stop(): void;
}

export async function startCsiProvisioner(api: KubeApi, driver: string): Promise<CsiProvisioner> {
  const provisioned: string[] = [];
  const held = new Set<string>();
  const started = new Set<string>();

  const provision = async (claim: Claim) => {
    const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
    const annotations = claim.metadata.annotations ?? {};
    const node = annotations[SELECTED_NODE];
    if (held.has(key) || !node || claim.spec.volumeName || annotations[STORAGE_PROVISIONER] !== driver) return;
    const name = `pvc-${claim.metadata.uid}`;
    if (started.has(name)) return;
    started.add(name);
    const [nodeObject, csiNode] = await Promise.all([
      api.get<KubeObject & { metadata: { labels?: Record<string, string> } }>('Node', node),
      api.get<KubeObject & { spec: { drivers?: { name: string; topologyKeys?: string[] }[] } }>('CSINode', node),
    ]);
    const labels = nodeObject?.metadata.labels ?? {};
    const keys = csiNode?.spec.drivers?.find((d) => d.name === driver)?.topologyKeys ?? ['kubernetes.io/hostname'];
    await api.create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': driver } },
      spec: {
        capacity: { storage: claim.spec.resources?.requests?.storage ?? '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: claim.spec.storageClassName,
        volumeMode: 'Filesystem',
        csi: { driver, volumeHandle: `vol-${claim.metadata.uid}` },
        claimRef: {
          kind: 'PersistentVolumeClaim',
          apiVersion: 'v1',
          namespace: claim.metadata.namespace,
          name: claim.metadata.name,
          uid: claim.metadata.uid,
        },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: keys.map((k) => ({ key: k, operator: 'In', values: [labels[k] ?? node] })) },
            ],
          },
        },
      },
    });
    provisioned.push(name);
  };

  const stop = await api.watch<Claim>('PersistentVolumeClaim', (type, claim) => {
    if (type !== 'DELETED') void provision(claim).catch(() => started.delete(`pvc-${claim.metadata.uid}`));
  });
  return {
    provisioned,
    hold(key) {
      held.add(key);
      return () => {
        held.delete(key);
        const [namespace, name] = key.split('/');
        void api.get<Claim>('PersistentVolumeClaim', name, namespace).then((claim) => claim && provision(claim));
      };
    },
    stop,
  };
}
