// In-tree → CSI translation, after k8s.io/csi-translation-lib, for what scheduling reads: the driver name, the
// volume handle and the translated node affinity. A PV is translated only when the node's CSINode lists its plugin
// in the `storage.alpha.kubernetes.io/migrated-plugins` annotation (upstream isPluginMigratedToCSIOnNode).
import type { CSINode, NodeSelectorTerm, PersistentVolume, Volume } from '../cluster/types.ts';
import {
  ANN_MIGRATED_PLUGINS,
  LABEL_BETA_REGION,
  LABEL_BETA_ZONE,
  LABEL_MULTI_ZONE_DELIMITER,
  LABEL_TOPOLOGY_REGION,
  LABEL_TOPOLOGY_ZONE,
} from './constants.ts';

interface InTreePlugin {
  pluginName: string;
  driverName: string;
  /** The PV / inline volume source field that marks this plugin. */
  sourceField: string;
  /** CSI zone topology key, when the translation rewrites PV topology (Azure Disk's does not). */
  topologyKey?: string;
  volumeHandle(source: Record<string, unknown>): string | undefined;
}

/** KubernetesVolumeIDToEBSVolumeID: `aws://zone/vol-x`, `aws:///vol-x` or a bare `vol-x`. */
function ebsVolumeHandle(source: Record<string, unknown>): string | undefined {
  const id = typeof source.volumeID === 'string' ? source.volumeID : '';
  if (!id.startsWith('aws://')) return id;
  const path = id.slice('aws://'.length);
  const slash = path.indexOf('/');
  const volume = slash < 0 ? '' : path.slice(slash).replace(/^\/+|\/+$/g, '');
  return /^vol-[^/]*$/.test(volume) ? volume : undefined;
}

const PLUGINS: readonly InTreePlugin[] = [
  {
    pluginName: 'kubernetes.io/aws-ebs',
    driverName: 'ebs.csi.aws.com',
    sourceField: 'awsElasticBlockStore',
    topologyKey: 'topology.ebs.csi.aws.com/zone',
    volumeHandle: ebsVolumeHandle,
  },
  {
    pluginName: 'kubernetes.io/gce-pd',
    driverName: 'pd.csi.storage.gke.io',
    sourceField: 'gcePersistentDisk',
    topologyKey: 'topology.gke.io/zone',
    // Inline/zonal handle as the translator builds it when the zone is not known.
    volumeHandle: (s) =>
      typeof s.pdName === 'string' ? `projects/UNSPECIFIED/zones/UNSPECIFIED/disks/${s.pdName}` : undefined,
  },
  {
    pluginName: 'kubernetes.io/azure-disk',
    driverName: 'disk.csi.azure.com',
    sourceField: 'azureDisk',
    volumeHandle: (s) => (typeof s.diskURI === 'string' ? s.diskURI : undefined),
  },
  {
    pluginName: 'kubernetes.io/cinder',
    driverName: 'cinder.csi.openstack.org',
    sourceField: 'cinder',
    topologyKey: 'topology.cinder.csi.openstack.org/zone',
    volumeHandle: (s) => (typeof s.volumeID === 'string' ? s.volumeID : undefined),
  },
];

const BY_PLUGIN_NAME = new Map(PLUGINS.map((p) => [p.pluginName, p]));

function pluginForSource(spec: Record<string, unknown>): InTreePlugin | undefined {
  for (const p of PLUGINS) {
    if (spec[p.sourceField] && typeof spec[p.sourceField] === 'object') return p;
  }
  return undefined;
}

/** The plugins a node has migrated, from its CSINode annotation. */
export function migratedPlugins(csiNode: CSINode | undefined): ReadonlySet<string> {
  const value = csiNode?.metadata.annotations?.[ANN_MIGRATED_PLUGINS];
  return new Set(value ? value.split(',') : []);
}

export function isMigratedOnNode(pluginName: string, csiNode: CSINode | undefined): boolean {
  return BY_PLUGIN_NAME.has(pluginName) && migratedPlugins(csiNode).has(pluginName);
}

/** In-tree plugin name of a PV (undefined for CSI and non-migratable sources). */
export function inTreePluginOfPV(pv: PersistentVolume): string | undefined {
  return pluginForSource(pv.spec)?.pluginName;
}

/** GetCSINameFromInTreeName, for StorageClass provisioners. */
export function csiDriverForInTreePlugin(pluginName: string): string | undefined {
  return BY_PLUGIN_NAME.get(pluginName)?.driverName;
}

export function isMigratableProvisioner(provisioner: string): boolean {
  return BY_PLUGIN_NAME.has(provisioner);
}

function hasKey(terms: readonly NodeSelectorTerm[] | undefined, key: string): boolean {
  return (terms ?? []).some((t) => (t.matchExpressions ?? []).some((r) => r.key === key));
}

/** getTopologyLabel: GA or beta labels, judged by the affinity first, then by the PV labels. */
function topologyLabels(pv: PersistentVolume): [zone: string, region: string] {
  const terms = pv.spec.nodeAffinity?.required?.nodeSelectorTerms;
  if (hasKey(terms, LABEL_TOPOLOGY_ZONE)) return [LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION];
  if (hasKey(terms, LABEL_BETA_ZONE)) return [LABEL_BETA_ZONE, LABEL_BETA_REGION];
  const labels = pv.metadata.labels ?? {};
  if (Object.hasOwn(labels, LABEL_TOPOLOGY_ZONE)) return [LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION];
  if (Object.hasOwn(labels, LABEL_BETA_ZONE)) return [LABEL_BETA_ZONE, LABEL_BETA_REGION];
  return [LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION];
}

function renameKey(terms: NodeSelectorTerm[], from: string, to: string): NodeSelectorTerm[] {
  return terms.map((t) =>
    t.matchExpressions
      ? { ...t, matchExpressions: t.matchExpressions.map((r) => (r.key === from ? { ...r, key: to } : r)) }
      : t,
  );
}

/**
 * translateTopologyFromInTreeToCSI: zone requirements move to the CSI key; without any, the PV's zone label becomes an
 * `In` requirement appended to every term; a beta region requirement becomes the GA one. Returns new terms (no mutation).
 */
export function translateTopology(pv: PersistentVolume, csiTopologyKey: string): NodeSelectorTerm[] | undefined {
  const [zoneLabel, regionLabel] = topologyLabels(pv);
  let terms = pv.spec.nodeAffinity?.required?.nodeSelectorTerms;
  if (terms && hasKey(terms, zoneLabel)) {
    terms = renameKey(terms, zoneLabel, csiTopologyKey);
  } else {
    const label = pv.metadata.labels?.[zoneLabel];
    if (label !== undefined) {
      const zones = [...new Set(label.split(LABEL_MULTI_ZONE_DELIMITER).map((z) => z.trim()))].filter((z) => z).sort();
      if (zones.length > 0) {
        const base: NodeSelectorTerm[] = terms && terms.length > 0 ? terms : [{}];
        const req = { key: csiTopologyKey, operator: 'In', values: zones };
        terms = base.map((t) => ({ ...t, matchExpressions: [...(t.matchExpressions ?? []), req] }));
      }
    }
  }
  if (terms && regionLabel === LABEL_BETA_REGION && hasKey(terms, regionLabel)) {
    terms = renameKey(terms, regionLabel, LABEL_TOPOLOGY_REGION);
  }
  return terms;
}

/** TranslateInTreePVToCSI for the fields scheduling reads: the CSI source and the node affinity. */
export function translateInTreePVToCSI(pv: PersistentVolume): PersistentVolume | undefined {
  const plugin = pluginForSource(pv.spec);
  if (!plugin) return undefined;
  const handle = plugin.volumeHandle(pv.spec[plugin.sourceField] as Record<string, unknown>);
  if (handle === undefined) return undefined;
  const spec: PersistentVolume['spec'] = { ...pv.spec, [plugin.sourceField]: undefined };
  spec.csi = { driver: plugin.driverName, volumeHandle: handle };
  if (plugin.topologyKey) {
    const terms = translateTopology(pv, plugin.topologyKey);
    if (terms) spec.nodeAffinity = { required: { nodeSelectorTerms: terms } };
  }
  return { ...pv, spec };
}

/** tryTranslatePVToCSI: the translated PV when the node migrated its plugin, else the PV itself. */
export function pvForNode(pv: PersistentVolume, csiNode: CSINode | undefined): PersistentVolume {
  const plugin = pluginForSource(pv.spec);
  if (!plugin || !migratedPlugins(csiNode).has(plugin.pluginName)) return pv;
  return translateInTreePVToCSI(pv) ?? pv;
}

/** An inline in-tree volume migrated on this node, as the CSI driver and handle the attach limit counts. */
export function inlineVolumeAsCSI(
  volume: Volume,
  csiNode: CSINode | undefined,
): { driver: string; handle: string } | undefined {
  const plugin = pluginForSource(volume);
  if (!plugin || !migratedPlugins(csiNode).has(plugin.pluginName)) return undefined;
  const handle = plugin.volumeHandle(volume[plugin.sourceField] as Record<string, unknown>);
  return handle ? { driver: plugin.driverName, handle } : undefined;
}

export function isInlineMigratable(volume: Volume): boolean {
  return pluginForSource(volume) !== undefined;
}
