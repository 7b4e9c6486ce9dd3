// The Helm chart, linted and rendered by a real helm for each mode and each value set under ci/: every object is
// valid for its API, RBAC is exactly what the code calls, and the KubeSchedulerConfiguration points at what the
// extender serves.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { RESOURCES } from '../../src/cluster/kube/resources.ts';
import { PLUGIN_NAMES } from '../../src/plugins/names.ts';
import { kubeSchedulerReleases } from '../components/components.ts';
import {
  allows,
  CHART,
  dryRunInstall,
  extenderContainer,
  extenderSettings,
  find,
  grants,
  helm,
  type K8sObject,
  one,
  type PolicyRule,
  podSpec,
  renderChart,
  schedulerConfigOf,
} from '../helpers/chart.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';

const valueSets = readdirSync(`${CHART}/ci`)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

/** Where the schemas of each API group version live (kubernetes-models and its CRD companions). */
const MODEL_MODULES: Record<string, string> = {
  'cert-manager.io/v1': '@kubernetes-models/cert-manager/cert-manager.io/v1',
  'monitoring.coreos.com/v1': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
};

async function validateAgainstSchema(obj: K8sObject): Promise<void> {
  const module = MODEL_MODULES[obj.apiVersion] ?? `kubernetes-models/${obj.apiVersion}`;
  const models = (await import(module)) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = models[obj.kind];
  assert.ok(Model, `no schema for ${obj.apiVersion} ${obj.kind}`);
  new Model(obj).validate();
}

interface SchedulerExtender {
  urlPrefix: string;
  filterVerb?: string;
  prioritizeVerb?: string;
  preemptVerb?: string;
  bindVerb?: string;
  nodeCacheCapable: boolean;
  httpTimeout: string;
  weight: number;
}

type PluginSet = { enabled?: { name: string }[]; disabled?: { name: string }[] };

interface SchedulerConfig {
  leaderElection: { leaderElect: boolean; resourceName: string; resourceNamespace: string };
  profiles: { schedulerName: string; plugins?: Record<string, PluginSet> }[];
  extenders: SchedulerExtender[];
}

/** Full delegation in one profile's plugins: every volume plugin the extender runs is disabled at multiPoint. */
const volumePluginsOff = (plugins: Record<string, PluginSet> | undefined): string[] =>
  (plugins?.multiPoint?.disabled ?? [])
    .map((p) => p.name)
    .filter((n) => (PLUGIN_NAMES as readonly string[]).includes(n));

const extenderRules = (objects: K8sObject[]) =>
  (one(objects, 'ClusterRole', '-extender') as unknown as { rules: PolicyRule[] }).rules;
const values = (file: string) =>
  (parseYaml(readFileSync(`${CHART}/ci/${file}`, 'utf8')) ?? {}) as Record<string, unknown>;
const schedulerConfig = (objects: K8sObject[]) => schedulerConfigOf(objects) as unknown as SchedulerConfig;

/** What the code calls, from src/cluster: list + watch of each cached kind; the bind verb's reads and writes. */
function expectedExtenderGrants(delegated: boolean): string[] {
  const out: string[] = [];
  for (const r of Object.values(RESOURCES)) {
    const group = r.apiVersion.includes('/') ? r.apiVersion.split('/')[0] : '';
    out.push(`list ${group}/${r.plural}`, `watch ${group}/${r.plural}`);
  }
  out.push('get /persistentvolumeclaims'); // filter re-reads the claims of a pod that fits nowhere
  out.push('patch /pods/status'); // KubeWriter.nominatePod: the node such a pod fits, when kube-scheduler's sample missed it
  if (delegated) {
    out.push(
      'get /pods', // confirms binds and assumed pods (KubeWriter.getPod)
      'create /pods/binding', // KubeWriter.bindPod
      'patch /persistentvolumes', // KubeWriter.updatePersistentVolume: JSON merge patch
      'patch /persistentvolumeclaims',
      'get /persistentvolumes', // re-read after a 409 that follows a lost 5xx answer
    );
  }
  return out.sort();
}

let served: TestExtender;
before(async () => {
  served = await createTestExtender([]);
});
after(async () => {
  await served.close();
});

describe('helm lint --strict', () => {
  it('passes with the default values', async () => {
    await helm(['lint', '--strict', CHART]);
  });
  for (const file of valueSets) {
    it(`passes with ci/${file}`, async () => {
      await helm(['lint', '--strict', CHART, '-f', `${CHART}/ci/${file}`]);
    });
  }
  it('refuses values outside values.schema.json', async () => {
    await assert.rejects(helm(['template', 'rel', CHART, '--set', 'mode=sidecar']), /mode.*scheduler.*extender/s);
    await assert.rejects(helm(['template', 'rel', CHART, '--set', 'extender.prot=1']), /prot/);
  });
});

for (const file of ['(defaults)', ...valueSets]) {
  const flags = file === '(defaults)' ? [] : ['-f', `${CHART}/ci/${file}`];
  const v = file === '(defaults)' ? {} : values(file);
  const mode = (v.mode as string | undefined) ?? 'scheduler';
  const delegated = v.delegateVolumeBinding !== false;

  describe(`helm template ${file} (mode ${mode}, ${delegated ? 'full delegation' : 'filter-only'})`, () => {
    let objects: K8sObject[];
    before(async () => {
      objects = await renderChart(flags);
    });

    it('renders objects that each validate against their Kubernetes schema', async () => {
      assert.ok(objects.length > 0);
      for (const obj of objects) {
        await assert.doesNotReject(validateAgainstSchema(obj), `${obj.kind} ${obj.metadata.name}`);
      }
    });

    it('grants the extender exactly the API access its code uses: list/watch of fifteen kinds, bind writes only when delegated', () => {
      assert.deepEqual(grants(extenderRules(objects)), expectedExtenderGrants(delegated));
      assert.equal(Object.keys(RESOURCES).length, 15);
    });

    it('runs every container non-root, read-only, unprivileged, without capabilities, with probes and resources', () => {
      const pod = podSpec(objects);
      assert.equal(pod.securityContext.runAsNonRoot, true);
      assert.deepEqual(pod.securityContext.seccompProfile, { type: 'RuntimeDefault' });
      for (const c of pod.containers) {
        assert.equal(c.securityContext?.readOnlyRootFilesystem, true, c.name);
        assert.equal(c.securityContext?.allowPrivilegeEscalation, false, c.name);
        assert.deepEqual(c.securityContext?.capabilities, { drop: ['ALL'] }, c.name);
        for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
          assert.ok(
            probe?.httpGet,
            `${c.name}: startup, liveness and readiness probes, each an HTTP GET kubelet makes`,
          );
          assert.equal(probe.exec, undefined, `${c.name}: no process spawned in the container per probe`);
        }
        assert.ok(c.resources?.requests, `${c.name} has resource requests`);
      }
      assert.ok(one(objects, 'PodDisruptionBudget'));
    });

    it('HA: two serving replicas by default, rollouts surge before any pod goes, one voluntary disruption at a time', () => {
      const deployment = one(objects, 'Deployment') as unknown as {
        spec: {
          replicas: number;
          strategy: { type: string; rollingUpdate: { maxSurge: number; maxUnavailable: number } };
        };
      };
      assert.equal(deployment.spec.replicas, 2);
      assert.deepEqual(deployment.spec.strategy, {
        type: 'RollingUpdate',
        rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
      });
      const pdb = one(objects, 'PodDisruptionBudget') as unknown as { spec: { maxUnavailable: number } };
      assert.equal(pdb.spec.maxUnavailable, 1);
    });

    it('passes the extender settings its CLI accepts', () => {
      const settings = extenderSettings(objects);
      assert.equal(settings.inCluster, true);
      assert.equal(settings.host, mode === 'scheduler' ? '127.0.0.1' : '0.0.0.0');
      // explain and the pending report write the line of the kube-scheduler the chart registers.
      assert.equal(settings.delegatedVolumeBinding, delegated);
      // On unless turned off, as in the binary.
      assert.equal(settings.pendingReport, (v.pendingReport as { enabled?: boolean } | undefined)?.enabled !== false);
    });

    if (mode === 'scheduler') {
      it("points kube-scheduler's extender entry at the port, URL prefix and verbs the sidecar serves", async () => {
        const config = schedulerConfig(objects);
        assert.equal(config.extenders.length, 1);
        const entry = config.extenders[0];
        const url = new URL(entry.urlPrefix);
        const settings = extenderSettings(objects);
        assert.equal(url.protocol, 'http:');
        assert.equal(url.hostname, settings.host);
        assert.equal(Number(url.port), settings.port);
        assert.equal(entry.nodeCacheCapable, true);
        const verbs = [entry.filterVerb, entry.prioritizeVerb, entry.preemptVerb, entry.bindVerb].filter(
          (x): x is string => x !== undefined,
        );
        assert.deepEqual(
          verbs,
          delegated ? ['filter', 'prioritize', 'preempt', 'bind'] : ['filter', 'prioritize', 'preempt'],
        );
        for (const verb of verbs) {
          assert.ok(served.extender.app.hasRoute({ method: 'POST', url: `${url.pathname}/${verb}` }), `serves ${verb}`);
        }
      });

      it("hands every volume decision to the extender when delegated: kube-scheduler's volume plugins off at every point, bindVerb set", () => {
        const config = schedulerConfig(objects);
        assert.equal(config.profiles.length, 1);
        const plugins = config.profiles[0].plugins;
        assert.deepEqual(volumePluginsOff(plugins).sort(), delegated ? [...PLUGIN_NAMES].sort() : []);
        for (const [point, set] of Object.entries(plugins ?? {})) {
          assert.deepEqual(set.enabled ?? [], [], `nothing enabled again at ${point}`);
          if (point !== 'multiPoint') assert.deepEqual(set.disabled ?? [], [], `nothing else disabled at ${point}`);
        }
        assert.equal(config.extenders[0].bindVerb !== undefined, delegated);
      });

      it("covers the extender's bind timeout with httpTimeout when binding is delegated", () => {
        const timeout = Number(schedulerConfig(objects).extenders[0].httpTimeout.replace(/s$/, ''));
        if (delegated) assert.ok(timeout >= extenderSettings(objects).bindTimeoutSeconds, `${timeout}s`);
        else assert.ok(timeout >= 1);
      });

      it('elects a leader on its own Lease, which its Role lets it update', () => {
        const config = schedulerConfig(objects);
        const name = config.profiles[0].schedulerName;
        assert.equal(name, (v.scheduler as { name?: string } | undefined)?.name ?? 'topology-scheduler');
        assert.deepEqual(config.leaderElection, {
          leaderElect: true,
          resourceLock: 'leases',
          resourceName: name,
          resourceNamespace: 'kube-system',
        });
        const role = one(objects, 'Role', '-leader-election') as unknown as { rules: PolicyRule[] };
        for (const verb of ['get', 'update']) {
          assert.ok(allows(role.rules, { verb, group: 'coordination.k8s.io', resource: 'leases', name }));
          assert.ok(!allows(role.rules, { verb, group: 'coordination.k8s.io', resource: 'leases', name: 'other' }));
        }
        const bound = find(objects, 'ClusterRoleBinding').map(
          (b) => (b as unknown as { roleRef: { name: string } }).roleRef.name,
        );
        assert.ok(bound.includes('system:kube-scheduler') && bound.includes('system:volume-scheduler'));
      });

      it('mounts the configuration kube-scheduler is started with', () => {
        const pod = podSpec(objects);
        const scheduler = pod.containers.find((c) => c.name === 'kube-scheduler')!;
        assert.ok(scheduler.command?.includes('--config=/etc/kubernetes/scheduler/config.yaml'));
        const mount = scheduler.volumeMounts!.find((m) => m.mountPath === '/etc/kubernetes/scheduler')!;
        assert.equal(
          pod.volumes.find((vol) => vol.name === mount.name)?.configMap?.name,
          one(objects, 'ConfigMap', '-config').metadata.name,
        );
      });
    } else {
      it('serves TLS on the Service port from the mounted certificate, with the client CA when clientAuth is on', () => {
        const settings = extenderSettings(objects);
        const service = one(objects, 'Service') as unknown as {
          spec: { ports: { port: number; targetPort: string }[] };
        };
        assert.equal(service.spec.ports[0].port, settings.port);
        assert.deepEqual(
          extenderContainer(objects).ports?.map((p) => [p.name, p.containerPort]),
          [[service.spec.ports[0].targetPort, settings.port]],
        );
        assert.equal(settings.tlsCertFile, '/etc/topology-extender/tls/tls.crt');
        assert.equal(settings.tlsKeyFile, '/etc/topology-extender/tls/tls.key');
        assert.equal(settings.clientCaFile, '/etc/topology-extender/tls/ca.crt');
        const tls = podSpec(objects).volumes.find((vol) => vol.name === 'tls');
        assert.equal(tls?.secret?.secretName, 'rel-topology-extender-tls');
        assert.equal(find(objects, 'ConfigMap', '-config').length, 0, 'no scheduler of its own');
      });
    }
  });
}

/** The KubeSchedulerConfiguration fragment NOTES.txt prints in mode extender: the extender entry, and the profile's plugins when delegated. */
const notesConfig = (notes: string) =>
  parseYaml(notes.slice(notes.indexOf('extenders:'))) as {
    extenders: (SchedulerExtender & { tlsConfig: Record<string, string> })[];
    profiles?: SchedulerConfig['profiles'];
  };

describe('mode extender: certificates and NOTES.txt', () => {
  it('issues the certificates with cert-manager exactly when its API is installed (tls.provider auto)', async () => {
    const objects = await renderChart(['--set', 'mode=extender', '--api-versions', 'cert-manager.io/v1']);
    assert.deepEqual(
      find(objects, 'Certificate')
        .map((c) => c.metadata.name)
        .sort(),
      ['rel-topology-extender-ca', 'rel-topology-extender-scheduler-client', 'rel-topology-extender-tls'],
    );
    assert.equal(find(objects, 'Secret').length, 0);
    const without = await renderChart(['--set', 'mode=extender']);
    assert.equal(find(without, 'Certificate').length, 0, 'no cert-manager API: the chart makes them');
    assert.equal(find(without, 'Secret', '-tls').length, 1);
  });

  it('generates them in the chart otherwise, and NOTES.txt prints the extender entry with that caData and serverName', async () => {
    const { objects, notes } = await dryRunInstall(['-f', `${CHART}/ci/extender-values.yaml`]);
    assert.equal(find(objects, 'Certificate').length, 0);
    const secret = one(objects, 'Secret', '-tls') as unknown as { data: Record<string, string> };
    const entry = notesConfig(notes).extenders[0];
    assert.equal(entry.urlPrefix, 'https://rel-topology-extender.kube-system.svc:8443/scheduler');
    assert.equal(entry.tlsConfig.serverName, 'rel-topology-extender.kube-system.svc');
    assert.equal(entry.tlsConfig.caData, secret.data['ca.crt']);
    assert.equal(entry.nodeCacheCapable, true);
    // The certificate is for the name kube-scheduler checks.
    const { X509Certificate } = await import('node:crypto');
    const cert = new X509Certificate(Buffer.from(secret.data['tls.crt'], 'base64'));
    assert.ok(cert.checkHost('rel-topology-extender.kube-system.svc'));
    assert.ok(cert.verify(new X509Certificate(Buffer.from(secret.data['ca.crt'], 'base64')).publicKey));
  });

  it("prints, when delegated (the default), bindVerb and the profile's plugins with every volume plugin off at multiPoint", async () => {
    for (const delegated of [true, false]) {
      const { notes } = await dryRunInstall(['--set', 'mode=extender', '--set', `delegateVolumeBinding=${delegated}`]);
      const printed = notesConfig(notes);
      assert.equal(printed.extenders[0].bindVerb !== undefined, delegated);
      const profiles = printed.profiles ?? [];
      assert.equal(profiles.length, delegated ? 1 : 0);
      if (delegated) assert.deepEqual(volumePluginsOff(profiles[0].plugins).sort(), [...PLUGIN_NAMES].sort());
    }
  });
});

describe("kube-scheduler's image follows the cluster's minor version (.Capabilities.KubeVersion)", () => {
  const image = async (flags: string[]) =>
    podSpec(await renderChart(flags)).containers.find((c) => c.name === 'kube-scheduler')!.image;

  it('defaults to the release the end-to-end tests run for that minor version, whatever the patch or vendor suffix', async () => {
    for (const [cluster, tag] of [
      ['v1.35.0', 'v1.35.4'],
      ['1.35.12', 'v1.35.4'],
      ['v1.36.0', 'v1.36.3'],
      ['v1.37.3-eks-4b2c1a', 'v1.37.2'],
    ]) {
      assert.equal(await image(['--kube-version', cluster]), `registry.k8s.io/kube-scheduler:${tag}`, cluster);
    }
  });

  it('takes scheduler.image.tag when set', async () => {
    const flags = ['--kube-version', 'v1.36.2', '--set', 'scheduler.image.tag=v1.36.9'];
    assert.equal(await image(flags), 'registry.k8s.io/kube-scheduler:v1.36.9');
  });

  it("refuses clusters outside the tested range, as Chart.yaml's kubeVersion says", async () => {
    for (const cluster of ['v1.34.9', 'v1.38.0']) {
      await assert.rejects(renderChart(['--kube-version', cluster]), /requires kubeVersion: >=1\.35\.0-0 <1\.38\.0-0/);
    }
  });

  it('defaults to exactly the kube-scheduler releases test/components pins, the ones the end-to-end tests run', async () => {
    const versions = await kubeSchedulerReleases();
    assert.equal(versions.length, 3);
    const defaults = await Promise.all(versions.map((v) => image(['--kube-version', v])));
    assert.deepEqual(
      defaults,
      versions.map((v) => `registry.k8s.io/kube-scheduler:${v}`),
    );
  });
});
