// kube-controller-manager's PV controller and a CSI external-provisioner, as far as scheduling needs them, running
// against the fake API server's state (whoever wrote it: kube-scheduler's VolumeBinding or our bind verb):
// - a PV whose claimRef names an unbound claim (a binder's choice) binds that claim, as syncVolume does;
// - a claim annotated with volume.kubernetes.io/selected-node whose class provisions gets a new PV, reachable where
//   the node's CSINode topology keys say (the hostname without them), and both are bound.
// Immediate-mode binding and reclaiming are not modelled: a test that needs them says so. A test can hold the
// provisioner back for a claim, to model one that is slow or down.
import type { FakeApiServer, FakeObject, StoredEvent } from './fake-apiserver.ts';

const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const NO_PROVISIONER = 'kubernetes.io/no-provisioner';

type Claim = FakeObject & {
  spec: { volumeName?: string; storageClassName?: string; resources?: { requests?: { storage?: string } } };
};
type Volume = FakeObject & {
  spec: { claimRef?: { name: string; namespace?: string; uid?: string }; capacity?: { storage?: string } };
};

export interface VolumeControllers {
  /** PVs the provisioner created, in order. */
  provisioned: string[];
  /** The provisioner leaves the claim (namespace/name) alone, as if slow or down for it, until the returned release. */
  hold(claim: string): () => void;
  stop(): void;
}

export function startVolumeControllers(server: FakeApiServer): VolumeControllers {
  const provisioned: string[] = [];
  const held = new Set<string>();

  const bindClaim = (claim: Claim, volume: Volume) => {
    const size = volume.spec.capacity?.storage ?? claim.spec.resources?.requests?.storage ?? '0';
    server.update({
      ...claim,
      metadata: {
        ...claim.metadata,
        annotations: {
          ...(claim.metadata.annotations as Record<string, string> | undefined),
          'pv.kubernetes.io/bind-completed': 'yes',
          'pv.kubernetes.io/bound-by-controller': 'yes',
        },
      },
      spec: { ...claim.spec, volumeName: volume.metadata.name },
      status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: size } },
    });
    const current = server.get('PersistentVolume', volume.metadata.name);
    if (current) server.update({ ...current, status: { phase: 'Bound' } });
  };

  /** syncVolume for a PV a binder gave a claimRef: bind the claim to it. */
  const syncVolume = (volume: Volume) => {
    const ref = volume.spec.claimRef;
    if (!ref || (volume.status as { phase?: string } | undefined)?.phase === 'Bound') return;
    const claim = server.get('PersistentVolumeClaim', ref.name, ref.namespace) as Claim | undefined;
    if (!claim || (ref.uid && claim.metadata.uid !== ref.uid)) return;
    if (claim.spec.volumeName && claim.spec.volumeName !== volume.metadata.name) return;
    bindClaim(claim, volume);
  };

  /** The external-provisioner for a claim a scheduler chose a node for. */
  const provision = (claim: Claim) => {
    if (held.has(`${claim.metadata.namespace}/${claim.metadata.name}`)) return;
    const selected = (claim.metadata.annotations as Record<string, string> | undefined)?.[SELECTED_NODE];
    if (!selected || claim.spec.volumeName) return;
    const cls = server.get('StorageClass', claim.spec.storageClassName ?? '') as
      | (FakeObject & { provisioner?: string })
      | undefined;
    const node = server.get('Node', selected);
    if (!cls?.provisioner || cls.provisioner === NO_PROVISIONER || !node) return;
    const name = `pvc-${claim.metadata.uid}`;
    if (server.get('PersistentVolume', name)) return;
    const labels = (node.metadata.labels ?? {}) as Record<string, string>;
    const csiNode = server.get('CSINode', selected) as
      | (FakeObject & { spec?: { drivers?: { name: string; topologyKeys?: string[] }[] } })
      | undefined;
    const keys = csiNode?.spec?.drivers?.find((d) => d.name === cls.provisioner)?.topologyKeys ?? [
      'kubernetes.io/hostname',
    ];
    const size = claim.spec.resources?.requests?.storage ?? '1Gi';
    const volume: Volume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': cls.provisioner } },
      spec: {
        capacity: { storage: size },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: cls.metadata.name,
        volumeMode: 'Filesystem',
        csi: { driver: cls.provisioner, volumeHandle: `vol-${claim.metadata.uid}` },
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
              { matchExpressions: keys.map((key) => ({ key, operator: 'In', values: [labels[key] ?? selected] })) },
            ],
          },
        },
      } as Volume['spec'],
      status: { phase: 'Bound' },
    };
    server.add(volume);
    provisioned.push(name);
    bindClaim(claim, volume);
  };

  // Events may be overtaken by later writes: act on the object as it is now.
  const onChange = (event: StoredEvent) => {
    if (event.type === 'DELETED') return;
    const { name, namespace } = event.object.metadata;
    const now = server.get(event.kind, name, namespace);
    if (!now) return;
    if (event.kind === 'PersistentVolume') syncVolume(now as Volume);
    else if (event.kind === 'PersistentVolumeClaim') provision(now as Claim);
  };
  const unsubscribe = server.subscribe(onChange);
  return {
    provisioned,
    hold(key) {
      held.add(key);
      return () => {
        held.delete(key);
        const [namespace, name] = key.split('/');
        const claim = server.get('PersistentVolumeClaim', name, namespace);
        if (claim) provision(claim as Claim);
      };
    },
    stop: unsubscribe,
  };
}
