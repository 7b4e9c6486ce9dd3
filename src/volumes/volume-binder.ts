// The scheduler volume binder over the cluster (upstream volumebinding/binder.go's volumeBinder): the VolumeBinder
// interface put together from one module per job: the sources it reads (sources.ts), the decision
// (find-pod-volumes.ts), assume and revert (assume.ts), the writes (bind-writes.ts), the read-back checks
// (check-bindings.ts) and the waits for the watch (keyed-waiter.ts). What stays here is BindPodVolumes' flow: write,
// wait until bound, read back, and what to do after a claim was lost to another writer.
import { pino } from 'pino';
import { podBindingState } from '../cluster/read-back.ts';
import type { ClusterStore } from '../cluster/store.ts';
import {
  type CSIDriver,
  type CSIStorageCapacity,
  type Node,
  namespaceOf,
  objectKey,
  type PersistentVolumeClaim,
  type Pod,
  type StorageClass,
} from '../cluster/types.ts';
import { type ClusterWriter, WriteError } from '../cluster/writer.ts';
import type { Log } from '../log.ts';
import { arePodVolumesBound, assumePodVolumes, revertAssumedPodVolumes } from './assume.ts';
import type { PVAssumeCache, PVCAssumeCache } from './assume-cache.ts';
import { allWritten, BindWriter } from './bind-writes.ts';
import {
  BinderError,
  type BindingInfo,
  type FindOptions,
  type FindResult,
  type HeldVolumes,
  type PodVolumes,
  type VolumeBinder,
} from './binder.ts';
import type { CapacityAccept } from './capacity-index.ts';
import { BindingChecker, rvNumber } from './check-bindings.ts';
import { claimHold, HOLD_SECONDS } from './claim-hold.ts';
import { getPodVolumeClaims, type PodVolumeClaims, podClaimsError } from './claims.ts';
import { type ClaimExplanation, explainPodVolumes } from './explain.ts';
import { PodVolumeFinder } from './find-pod-volumes.ts';
import type { InFlightProvisions } from './in-flight.ts';
import { KeyedWaiter } from './keyed-waiter.ts';
import type { CapacityAccountingMode, DynamicProvision } from './provisioning.ts';
import { PVControllerView } from './pv-controller-view.ts';
import { claimKey } from './pv-matching.ts';
import { BinderSources } from './sources.ts';

export interface VolumeBinderOptions {
  store: ClusterStore;
  writer: ClusterWriter;
  bindTimeoutSeconds: number;
  /** Default joint (the setting's default). */
  capacityAccounting?: CapacityAccountingMode;
  logger?: Log;
  /** The clock of claim holds and bind deadlines; default Date.now. */
  now?: () => number;
}

export class ClusterVolumeBinder implements VolumeBinder {
  readonly #sources: BinderSources;
  readonly #finder: PodVolumeFinder;
  readonly #writes: BindWriter;
  readonly #checker: BindingChecker;
  readonly #waiter: KeyedWaiter;
  readonly #writer: ClusterWriter;
  readonly #logger: Log;
  readonly #now: () => number;
  readonly #offControllerView: () => void;
  bindTimeoutSeconds: number;
  readonly capacityAccounting: CapacityAccountingMode;
  readonly pvCache: PVAssumeCache;
  readonly pvcCache: PVCAssumeCache;
  readonly inFlight: InFlightProvisions;
  jointOnlyRejections = 0;

  constructor(options: VolumeBinderOptions) {
    this.#writer = options.writer;
    this.#logger = options.logger ?? pino({ level: 'silent' });
    this.#now = options.now ?? Date.now;
    this.bindTimeoutSeconds = options.bindTimeoutSeconds;
    this.capacityAccounting = options.capacityAccounting ?? 'joint';
    this.#waiter = new KeyedWaiter({ now: this.#now });
    const sources = new BinderSources(options.store, this.#waiter);
    this.#sources = sources;
    this.pvCache = sources.pvCache;
    this.pvcCache = sources.pvcCache;
    this.inFlight = sources.inFlight;
    this.#finder = new PodVolumeFinder(sources, this.capacityAccounting);
    // The PVs the store holds now count as changed now (pv-controller-view.ts).
    const controllerView = new PVControllerView(this.#now);
    this.#offControllerView = options.store.on('PersistentVolume', (e) => {
      controllerView.observe(e, !options.store.isSynced('PersistentVolume'));
      this.#writes.volumeChanged(e.obj.metadata.name);
    });
    this.#writes = new BindWriter({
      sources,
      writer: this.#writer,
      logger: this.#logger,
      now: this.#now,
      controllerView,
    });
    this.#checker = new BindingChecker(sources, this.#writer, this.#now);
    sources.start((key) => this.#writes.claimChanged(key));
  }

  close(): void {
    this.#offControllerView();
    this.#writes.close();
    this.#sources.close();
  }

  generation(): number {
    return this.#sources.generation();
  }

  // What explain and the tests read of the sources.
  storageClass(name: string): StorageClass | undefined {
    return this.#sources.storageClass(name);
  }

  csiDriver(name: string): CSIDriver | undefined {
    return this.#sources.csiDriver(name);
  }

  findCapacity<C>(
    className: string,
    nodeLabels: Readonly<Record<string, string>> | undefined,
    accept: CapacityAccept<C>,
    context: C,
  ): CSIStorageCapacity | undefined {
    return this.#sources.findCapacity(className, nodeLabels, accept, context);
  }

  node(name: string): Node | undefined {
    return this.#sources.node(name);
  }

  claim(namespace: string | undefined, name: string): PersistentVolumeClaim | undefined {
    return this.#sources.claim(namespace, name);
  }

  podClaimsError(pod: Pod): string | undefined {
    return podClaimsError(pod, (name) => this.#sources.claim(pod.metadata.namespace, name));
  }

  getPodVolumeClaims(pod: Pod): PodVolumeClaims {
    return getPodVolumeClaims(
      pod,
      (name) => this.#sources.claim(pod.metadata.namespace, name),
      (name) => this.#sources.storageClass(name),
    );
  }

  findPodVolumes(pod: Pod, claims: PodVolumeClaims, node: Node, options?: FindOptions): FindResult {
    return this.#finder.findPodVolumes(pod, claims, node, options);
  }

  explainPodVolumes(
    pod: Pod,
    claims: PodVolumeClaims,
    node: Node,
    options: { held?: HeldVolumes; maxVolumes: number },
  ): ClaimExplanation[] {
    return explainPodVolumes(this, pod, claims, node, options.held, options.maxVolumes);
  }

  arePodVolumesBound(pod: Pod): boolean {
    return arePodVolumesBound(this.#sources, pod);
  }

  assumePodVolumes(pod: Pod, nodeName: string, podVolumes: PodVolumes): { allBound: boolean; assumed: PodVolumes } {
    return assumePodVolumes(this.#sources, pod, nodeName, podVolumes);
  }

  revertAssumedPodVolumes(podVolumes: PodVolumes): void {
    revertAssumedPodVolumes(this.#sources, podVolumes);
  }

  /** bindAPIUpdate (bind-writes.ts): the writes alone, without the wait. */
  bindAPIUpdate(podVolumes: PodVolumes): Promise<PodVolumes> {
    return this.#writes.bindAPIUpdate(podVolumes);
  }

  checkPodVolumesFromAPI(
    pod: Pod,
    nodeName: string,
    written?: ReadonlyMap<string, BindingInfo>,
  ): Promise<string | undefined> {
    return this.#checker.checkPodVolumesFromAPI(pod, nodeName, written);
  }

  /** checkBindings (check-bindings.ts), on the watch's objects. */
  checkBindings(
    pod: Pod,
    nodeName: string,
    bindings: readonly BindingInfo[],
    provisions: readonly DynamicProvision[],
    untilProvisioned = false,
  ): boolean {
    return this.#checker.checkBindings(pod, nodeName, bindings, provisions, untilProvisioned);
  }

  /**
   * BindPodVolumes: hold the claims, write the assumed PVs, then the annotated PVCs (resourceVersion preconditions),
   * restoring what was not written on the first failure; then wait, driven by store events, until every claim is
   * bound, and read the pod's claims back from the API. When that fails, the PVs it wrote whose claims another writer
   * bound are unbound again. A claim lost to another writer (409) is not yet a failure: see #afterLostClaim. One
   * deadline, bindTimeoutSeconds from the start, bounds every wait of the bind.
   */
  async bindPodVolumes(pod: Pod, nodeName: string, podVolumes: PodVolumes, signal?: AbortSignal): Promise<void> {
    const deadline = this.#now() + this.bindTimeoutSeconds * 1000;
    try {
      await this.#bindAndWait(pod, nodeName, podVolumes, deadline, signal);
    } catch (err) {
      const cause = err instanceof BinderError ? err.cause : err;
      if (!(cause instanceof WriteError) || cause.code !== 409) throw err;
      await this.#afterLostClaim(pod, nodeName, err as Error, deadline, signal);
    }
  }

  async #bindAndWait(
    pod: Pod,
    nodeName: string,
    podVolumes: PodVolumes,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const written = await this.#writes.bindAPIUpdate(podVolumes);
    const { staticBindings, dynamicProvisions } = written;
    // What checkBindings reads: the node (and its CSINode), the pod, each binding's PV and claim, each provisioned
    // claim (a PV naming it wakes its key too).
    const reads = [
      `Node/${nodeName}`,
      `Pod/${objectKey('Pod', pod)}`,
      ...staticBindings.flatMap((b) => [
        `PersistentVolume/${b.pv.metadata.name}`,
        `PersistentVolumeClaim/${claimKey(b.pvc)}`,
      ]),
      ...dynamicProvisions.map((p) => `PersistentVolumeClaim/${claimKey(p.pvc)}`),
    ];
    try {
      if (dynamicProvisions.length > 0) {
        // Once the external-provisioner's PVs name the claims, their halves are written as a static binding's are.
        await this.#waiter.waitUntil(
          () => this.#checker.checkBindings(pod, nodeName, staticBindings, dynamicProvisions, true),
          { keys: reads, deadline, signal },
        );
        await allWritten(
          dynamicProvisions.map(async (p) => {
            p.pvc = await this.#writes.bindProvisionedClaim(p.pvc);
          }),
        );
      }
      await this.#waiter.waitUntil(
        () => this.#checker.checkBindings(pod, nodeName, staticBindings, dynamicProvisions),
        { keys: reads, deadline, signal },
      );
      const halves = staticBindings.filter((b) => b.pvc.spec.volumeName === b.pv.metadata.name);
      const stranded = await this.#checker.checkPodVolumesFromAPI(
        pod,
        nodeName,
        new Map(halves.map((b) => [b.pvc.metadata.name, b])),
      );
      if (stranded) throw new Error(stranded);
    } catch (err) {
      await this.#writes.unbindLost(written.staticBindings);
      throw new BinderError(`binding volumes: ${(err as Error).message}`, err);
    }
  }

  /**
   * After this bind lost a claim of the pod to another writer (a 409): most often another bind of the same pod,
   * kube-scheduler's retry on another replica, which may bind the pod to this node any moment. Its outcome decides,
   * so the answer waits for facts that no later write can make false, read from the API:
   * - the pod bound (to any node): rethrown, and bind answers from the pod;
   * - every claim bound to a PV that fits the node: resolves, and the Binding goes ahead (upstream's rule for bound
   *   claims; a Binding the other bind made first is read back as success);
   * - a claim bound, prebound or held for a volume the node cannot use, or unbound and held by no one: no bind of
   *   the pod can land on the node before that changes, which takes another bind's writes: rethrown with why;
   * - otherwise a bind may still bind a claim for this node (held for a PV that fits it, being provisioned, prebound
   *   to one): wait until one of those claims or the pod changes (or a hold expires), then look again.
   * The deadline and the signal bound the wait; past them the error stands as it was.
   */
  async #afterLostClaim(
    pod: Pod,
    nodeName: string,
    lost: Error,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const podKey = objectKey('Pod', pod);
    for (;;) {
      // The pod gone, created again or bound (to any node): bind answers from the pod.
      const live = await this.#writer.getPod(namespaceOf(pod), pod.metadata.name);
      if (podBindingState(live, podKey, pod.metadata.uid, nodeName) !== undefined) throw lost;
      const claims = await this.#checker.claimsForNode(pod, nodeName);
      if (claims.state === 'bound') {
        this.#logger.info({ pod: podKey, node: nodeName }, 'another bind bound the claims for this node meanwhile');
        return;
      }
      if (claims.state === 'refused') throw new BinderError(`${lost.message}; ${claims.why}`, lost);
      const read = claims.inFlight;
      const changed = () =>
        !!this.#sources.store.get('Pod', podKey)?.spec.nodeName ||
        read.some((c) => {
          const watched = this.#sources.pvcCache.getAPI(claimKey(c));
          const hold = claimHold(c);
          return !watched || rvNumber(watched) > rvNumber(c) || (!!hold && this.#now() - hold.at > HOLD_SECONDS * 1000);
        });
      try {
        await this.#waiter.waitUntil(changed, {
          keys: [`Pod/${podKey}`, ...read.map((c) => `PersistentVolumeClaim/${claimKey(c)}`)],
          deadline,
          signal,
        });
      } catch (err) {
        throw new BinderError(
          `${lost.message}; ${(err as Error).message} waiting for another bind of the claims`,
          lost,
        );
      }
    }
  }
}
