// Property: explain never disagrees with filter. For random clusters and pods, each node's verdict and reasons equal
// the filter verb's, the PV explain says it would choose is the one the filter's decision binds, the PVs counted as
// on other nodes are exactly those whose affinity admits other nodes only, and every other PV of the class that is
// neither chosen nor refused is at least as large as the chosen one (the smallest fitting PV wins).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { AnyObject, PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/cluster/types.ts';
import { filter } from '../../src/extender/filter.ts';
import { explain } from '../../src/ops/explain.ts';
import { DEFAULT_PROFILE_PLUGINS } from '../../src/plugins/default-profile.ts';
import { VOLUME_BINDING, type VolumeBindingPlugin } from '../../src/plugins/index.ts';
import type { ClaimExplanation } from '../../src/volumes/explain.ts';
import { pvCapacity } from '../../src/volumes/pv-matching.ts';
import { claim, localPV, node, pod, storageClass } from '../helpers/objects.ts';
import { cluster } from './helpers.ts';

const CLASSES = ['local', 'fast'] as const;
const MODES = [['ReadWriteOnce'], ['ReadOnlyMany'], ['ReadWriteOnce', 'ReadWriteMany'], ['ReadWriteOncePod']];

const world = fc.record({
  nodeCount: fc.integer({ min: 1, max: 4 }),
  pvs: fc.array(
    fc.record({
      cls: fc.constantFrom(...CLASSES),
      size: fc.integer({ min: 1, max: 10 }),
      node: fc.option(fc.nat(3), { nil: undefined }),
      claimedBy: fc.option(fc.nat(4), { nil: undefined }),
      phase: fc.constantFrom('Available', 'Available', 'Released'),
      block: fc.boolean(),
      modes: fc.nat(MODES.length - 1),
      tier: fc.constantFrom('gold', 'silver'),
    }),
    { maxLength: 10 },
  ),
  claims: fc.array(
    fc.record({
      cls: fc.constantFrom(...CLASSES),
      size: fc.integer({ min: 1, max: 10 }),
      block: fc.boolean(),
      modes: fc.nat(MODES.length - 1),
      gold: fc.boolean(),
      boundTo: fc.option(fc.nat(9), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  holder: fc.option(fc.record({ claim: fc.nat(2), node: fc.nat(3) }), { nil: undefined }),
});

it('explain agrees with filter on every node, and names the PV the filter would bind', () => {
  fc.assert(
    fc.property(world, (w) => {
      const nodes = Array.from({ length: w.nodeCount }, (_, i) => node(`n${i}`, { zone: `z${i % 2}` }));
      const pvs: PersistentVolume[] = w.pvs.map((p, i) => {
        const pv = structuredClone(localPV(`pv-${i}`, `n${p.node ?? 0}`, { size: `${p.size}Gi`, className: p.cls }));
        if (p.node === undefined) delete pv.spec.nodeAffinity;
        if (p.claimedBy !== undefined) pv.spec.claimRef = { namespace: 'default', name: `c${p.claimedBy}` };
        pv.status = { phase: p.claimedBy !== undefined ? 'Bound' : p.phase };
        if (p.block) pv.spec.volumeMode = 'Block';
        pv.spec.accessModes = MODES[p.modes];
        pv.metadata.labels = { tier: p.tier };
        return pv;
      });
      const claims: PersistentVolumeClaim[] = w.claims.map((c, i) => {
        const bound = c.boundTo !== undefined && c.boundTo < pvs.length ? pvs[c.boundTo] : undefined;
        const pvc = structuredClone(
          claim(`c${i}`, {
            size: `${c.size}Gi`,
            className: c.cls,
            ...(bound ? { volumeName: bound.metadata.name } : {}),
          }),
        );
        if (c.block) pvc.spec.volumeMode = 'Block';
        pvc.spec.accessModes = MODES[c.modes];
        if (c.gold) pvc.spec.selector = { matchLabels: { tier: 'gold' } };
        return pvc;
      });
      const subject = pod('subject', { claims: claims.map((c) => c.metadata.name) });
      const objects: AnyObject[] = [...nodes, ...CLASSES.map((c) => storageClass(c)), ...pvs, ...claims, subject];
      if (w.holder && w.holder.claim < claims.length) {
        objects.push(pod('holder', { claims: [`c${w.holder.claim}`], nodeName: `n${w.holder.node % w.nodeCount}` }));
      }
      const { deps } = cluster(objects);
      const names = [...deps.cache.nodeNames(), 'ghost'];
      const filtered = filter({ Pod: subject as never, Nodes: null, NodeNames: names }, deps);
      if (filtered.Error !== '') return; // an internal error is no verdict to compare with
      // The verbs run the volume plugins only: explain without the rest of the default profile must agree with them.
      const answer = explain(deps, {
        pod: subject as never,
        nodes: names,
        maxVolumes: 100,
        disabledPlugins: [...DEFAULT_PROFILE_PLUGINS],
      });
      assert.equal(answer.totalNodes, names.length);
      assert.equal(answer.feasibleNodes, filtered.NodeNames?.length);
      assert.equal(answer.summary.startsWith(`0/${names.length} nodes are available:`), answer.feasibleNodes === 0);

      const binding = deps.framework.plugins.find((p) => p.name === VOLUME_BINDING) as VolumeBindingPlugin;
      for (const n of answer.nodes) {
        if (n.verdict === 'Fits') assert.ok(filtered.NodeNames?.includes(n.name), `${n.name} fits in both`);
        else if (n.verdict === 'Unschedulable') assert.equal(filtered.FailedNodes[n.name], n.reasons.join(', '));
        else assert.equal(filtered.FailedAndUnresolvableNodes[n.name], n.reasons.join(', '), n.name);

        const explained = (n.detail.VolumeBinding as { claims: ClaimExplanation[] } | undefined)?.claims ?? [];
        // What filter chose there: the volumes bind would find for the node at this generation.
        const { binder } = binding;
        const decision =
          n.verdict === 'Fits'
            ? binder.findPodVolumes(subject as Pod, binder.getPodVolumeClaims(subject as Pod), binder.node(n.name)!)
                .podVolumes
            : undefined;
        for (const c of explained) {
          if (c.phase !== 'Unbound' || c.refusedVolumes === undefined) continue;
          const chosenByFilter = decision?.staticBindings.find((b) => `default/${b.pvc.metadata.name}` === c.claim);
          if (n.verdict === 'Fits')
            assert.equal(c.chosenVolume, chosenByFilter?.pv.metadata.name, `${n.name} ${c.claim}`);
          const refused = new Set(c.refusedVolumes.map((r) => r.name));
          const pvc = claims.find((x) => `default/${x.metadata.name}` === c.claim)!;
          const ofClass = pvs.filter((p) => p.spec.storageClassName === pvc.spec.storageClassName);
          // Counted, not listed: PVs whose affinity admits another node only, unless pre-bound to this very claim.
          const elsewhere = new Set(
            ofClass
              .filter((p) => p.spec.nodeAffinity && p.spec.claimRef?.name !== pvc.metadata.name)
              .filter(
                (p) => p.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions?.[0].values?.[0] !== n.name,
              )
              .map((p) => p.metadata.name),
          );
          assert.equal(c.volumesOnOtherNodes ?? 0, elsewhere.size, `${n.name} ${c.claim}: PVs on other nodes counted`);
          for (const name of refused)
            assert.ok(!elsewhere.has(name), `${n.name} ${c.claim}: ${name} listed and counted`);
          if (c.refusedVolumes.some((r) => r.refusal === 'PreBoundNodeAffinityMismatch')) continue; // decided alone
          if (c.chosenVolume === undefined) {
            assert.equal(
              refused.size + elsewhere.size,
              ofClass.length,
              `${n.name} ${c.claim}: no PV chosen, so every PV of the class was refused (listed) or is elsewhere (counted)`,
            );
            continue;
          }
          assert.ok(!refused.has(c.chosenVolume));
          assert.ok(!elsewhere.has(c.chosenVolume));
          const chosen = pvs.find((p) => p.metadata.name === c.chosenVolume)!;
          if (chosen.spec.claimRef?.name === pvc.metadata.name) continue; // pre-bound: decides alone, scan stops
          for (const p of ofClass) {
            if (p === chosen || refused.has(p.metadata.name) || elsewhere.has(p.metadata.name)) continue;
            assert.ok(pvCapacity(p) >= pvCapacity(chosen), `${p.metadata.name} fits but is smaller than the chosen PV`);
          }
        }
      }
    }),
    { numRuns: 150 },
  );
});
