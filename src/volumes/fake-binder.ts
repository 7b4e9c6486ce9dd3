// A VolumeBinder that answers from a fixed configuration and records what it was asked (upstream's
// volumebinding/fake_binder.go): for tests of the plugin, the bind and the operations views that need a binder's
// answer, not a cluster behind it.
import type { Node, PersistentVolumeClaim, Pod } from '../cluster/types.ts';
import { PVAssumeCache, PVCAssumeCache } from './assume-cache.ts';
import type { FindOptions, FindResult, HeldVolumes, PodVolumes, VolumeBinder } from './binder.ts';
import type { PodVolumeClaims } from './claims.ts';
import type { ClaimExplanation } from './explain.ts';
import { InFlightProvisions } from './in-flight.ts';
import type { CapacityAccountingMode } from './provisioning.ts';

/** FakeVolumeBinderConfig: each answer the fake gives; every one defaults to "nothing to do, no error". */
export interface FakeVolumeBinderConfig {
  /** AssumePodVolumes answers allBound (preBind then only reads back). */
  allBound?: boolean;
  /** FindPodVolumes' conflict reasons, on every node. */
  findReasons?: string[];
  /** Thrown by findPodVolumes (an internal error). */
  findErr?: Error;
  /** What findPodVolumes decides on every node. */
  podVolumes?: PodVolumes;
  /** GetPodVolumeClaims' classification (default: none). */
  claims?: PodVolumeClaims;
  /** podHasPVCs' verdict. */
  claimsError?: string;
  /** Thrown by assumePodVolumes. */
  assumeErr?: Error;
  /** Thrown by bindPodVolumes. */
  bindErr?: Error;
  /** checkPodVolumesFromAPI's answer. */
  stranded?: string;
  bindTimeoutSeconds?: number;
  /** The nodes node() knows (reserve looks its node up when filter left no decision). */
  nodes?: Node[];
}

const NO_VOLUMES = (): PodVolumes => ({ staticBindings: [], dynamicProvisions: [] });

export class FakeVolumeBinder implements VolumeBinder {
  readonly config: FakeVolumeBinderConfig;
  assumeCalled = false;
  bindCalled = false;
  revertCalled = false;
  /** The nodes findPodVolumes was asked about, in order. */
  readonly found: string[] = [];
  readonly bindTimeoutSeconds: number;
  readonly capacityAccounting: CapacityAccountingMode = 'joint';
  readonly pvCache = new PVAssumeCache();
  readonly pvcCache = new PVCAssumeCache();
  readonly inFlight = new InFlightProvisions({ nodeLabels: () => undefined, reachingCapacity: () => undefined });
  jointOnlyRejections = 0;

  constructor(config: FakeVolumeBinderConfig = {}) {
    this.config = config;
    this.bindTimeoutSeconds = config.bindTimeoutSeconds ?? 600;
  }

  generation(): number {
    return 0;
  }

  node(name: string): Node | undefined {
    return this.config.nodes?.find((n) => n.metadata.name === name);
  }

  claim(_namespace: string | undefined, _name: string): PersistentVolumeClaim | undefined {
    return undefined;
  }

  podClaimsError(_pod: Pod): string | undefined {
    return this.config.claimsError;
  }

  getPodVolumeClaims(_pod: Pod): PodVolumeClaims {
    return this.config.claims ?? { boundClaims: [], unboundClaimsDelayBinding: [], unboundClaimsImmediate: [] };
  }

  findPodVolumes(_pod: Pod, _claims: PodVolumeClaims, node: Node, _options?: FindOptions): FindResult {
    this.found.push(node.metadata.name);
    if (this.config.findErr) throw this.config.findErr;
    return { podVolumes: this.config.podVolumes ?? NO_VOLUMES(), reasons: [...(this.config.findReasons ?? [])] };
  }

  explainPodVolumes(
    _pod: Pod,
    _claims: PodVolumeClaims,
    _node: Node,
    _options: { held?: HeldVolumes; maxVolumes: number },
  ): ClaimExplanation[] {
    return [];
  }

  assumePodVolumes(_pod: Pod, _nodeName: string, podVolumes: PodVolumes): { allBound: boolean; assumed: PodVolumes } {
    this.assumeCalled = true;
    if (this.config.assumeErr) throw this.config.assumeErr;
    return { allBound: this.config.allBound === true, assumed: podVolumes };
  }

  revertAssumedPodVolumes(_podVolumes: PodVolumes): void {
    this.revertCalled = true;
  }

  async bindPodVolumes(_pod: Pod, _nodeName: string, _podVolumes: PodVolumes, _signal?: AbortSignal): Promise<void> {
    this.bindCalled = true;
    if (this.config.bindErr) throw this.config.bindErr;
  }

  async checkPodVolumesFromAPI(_pod: Pod, _nodeName: string): Promise<string | undefined> {
    return this.config.stranded;
  }

  close(): void {}
}
