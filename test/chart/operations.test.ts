// What an operator meets on day two (issue 19): the chart's defaults survive a drain and a lost node, every container
// is probed over HTTP, shutdown is never cut short, certificates renew and reach kube-scheduler, the image is named or
// refused plainly, and the optional alerts and dashboard query metrics the extender really exports.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parser as promql } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';
import {
  CHART,
  dryRunInstall,
  extenderContainer,
  extenderSettings,
  find,
  type K8sObject,
  one,
  podSpec,
  renderChart,
  schedulerConfigOf,
} from '../helpers/chart.ts';
import { createTestExtender, type TestExtender } from '../helpers/extender.ts';
import { claim, node, pod, storageClass } from '../helpers/objects.ts';

const valueSets = readdirSync(`${CHART}/ci`).filter((f) => f.endsWith('.yaml'));
const renderings = ['(defaults)', '--set mode=extender', ...valueSets];
const flagsOf = (what: string) =>
  what === '(defaults)' ? [] : what.startsWith('--') ? what.split(' ') : ['-f', `${CHART}/ci/${what}`];

/** kube-scheduler's extender entry: in the ConfigMap (mode scheduler) or as NOTES.txt prints it (mode extender). */
const extenderEntry = (objects: K8sObject[], notes: string) => {
  type Config = { extenders: { httpTimeout: string; bindVerb?: string }[] };
  const config = find(objects, 'ConfigMap', '-config').length
    ? (schedulerConfigOf(objects) as Config)
    : (parseYaml(notes.slice(notes.indexOf('extenders:'))) as Config);
  const [entry] = config.extenders;
  return { httpTimeoutSeconds: Number(entry.httpTimeout.replace(/s$/, '')), binds: entry.bindVerb !== undefined };
};

describe('mode extender is safe by default: its own pods can always be placed again', () => {
  let objects: K8sObject[];
  before(async () => {
    objects = await renderChart(['--set', 'mode=extender']);
  });

  it('runs two replicas, at most one per node, counting neither cordoned nodes nor the previous rollout', () => {
    const deployment = one(objects, 'Deployment') as unknown as { spec: { replicas: number } };
    assert.ok(deployment.spec.replicas >= 2);
    const [spread, ...more] = podSpec(objects).topologySpreadConstraints ?? [];
    assert.equal(more.length, 0);
    assert.deepEqual(spread, {
      maxSkew: 1,
      topologyKey: 'kubernetes.io/hostname',
      whenUnsatisfiable: 'DoNotSchedule',
      nodeTaintsPolicy: 'Honor',
      matchLabelKeys: ['pod-template-hash'],
      labelSelector: {
        matchLabels: { 'app.kubernetes.io/name': 'topology-extender', 'app.kubernetes.io/instance': 'rel' },
      },
    });
  });

  it('lets a drain evict one replica at a time, and refuses a budget that would block every drain', async () => {
    const pdb = one(objects, 'PodDisruptionBudget') as unknown as { spec: { maxUnavailable: number } };
    assert.equal(pdb.spec.maxUnavailable, 1);
    await assert.rejects(renderChart(['--set', 'podDisruptionBudget.maxUnavailable=0']), /maxUnavailable/);
  });

  it('keeps serving for a few seconds after deletion, while the Service drops the pod', () => {
    const c = extenderContainer(objects) as { lifecycle?: { preStop?: { sleep?: { seconds: number } } } };
    assert.ok((c.lifecycle?.preStop?.sleep?.seconds ?? 0) >= 1);
    assert.ok((podSpec(objects).terminationGracePeriodSeconds ?? 30) > (c.lifecycle?.preStop?.sleep?.seconds ?? 0));
  });

  it("runs at the cluster's critical priority, so a replacement preempts its way onto a full cluster", () => {
    assert.equal(podSpec(objects).priorityClassName, 'system-cluster-critical');
  });

  it('refuses one replica that only the extender itself could place again, unless another scheduler places it', async () => {
    await assert.rejects(
      renderChart(['--set', 'mode=extender', '--set', 'replicaCount=1']),
      /replicaCount: 1 in mode extender with ignorable: false cannot recover/,
    );
    for (const flags of [
      ['--set', 'schedulerExtender.ignorable=true'],
      ['--set', 'podSchedulerName=fallback-scheduler'],
    ]) {
      const single = await renderChart(['--set', 'mode=extender', '--set', 'replicaCount=1', ...flags]);
      assert.equal(one(single, 'Deployment').kind, 'Deployment');
    }
    const placed = await renderChart(['--set', 'mode=extender', '--set', 'podSchedulerName=fallback-scheduler']);
    assert.equal(podSpec(placed).schedulerName, 'fallback-scheduler');
    assert.equal(podSpec(objects).schedulerName, undefined, 'the default scheduler unless told');
  });

  it('explains the ignorable trade-off in values.yaml, and NOTES.txt states what it means for this release', async () => {
    const values = readFileSync(`${CHART}/values.yaml`, 'utf8');
    const comment = values.slice(values.indexOf('httpTimeoutSeconds:'), values.indexOf('\n  ignorable:'));
    for (const point of [
      /own replacement pods/,
      /without any volume check/,
      /PodDisruptionBudget/,
      /priorityClassName/,
    ]) {
      assert.match(comment, point);
    }
    const { notes } = await dryRunInstall(['--set', 'mode=extender']);
    assert.match(notes, /With ignorable: false, kube-scheduler places no pod while no replica answers/);
  });
});

describe('mode scheduler: the sidecar is probed and scraped on the pod IP, its verbs stay on loopback', () => {
  let objects: K8sObject[];
  before(async () => {
    objects = await renderChart(['--set', 'serviceMonitor.enabled=true']);
  });

  it('listens for verbs on 127.0.0.1 and for health and metrics on the pod IP (downward API)', () => {
    const settings = extenderSettings(objects);
    assert.equal(settings.host, '127.0.0.1');
    assert.equal(settings.healthHost, '$(POD_IP)');
    const env = extenderContainer(objects).env?.find((e) => e.name === 'POD_IP');
    assert.equal(env?.valueFrom?.fieldRef?.fieldPath, 'status.podIP');
    assert.notEqual(settings.healthPort, settings.port);
  });

  it('probes it with HTTP GETs on that port', () => {
    const c = extenderContainer(objects);
    const port = c.ports?.find((p) => p.containerPort === extenderSettings(objects).healthPort);
    assert.ok(port?.name);
    for (const [probe, path] of [
      [c.startupProbe, '/healthz'],
      [c.livenessProbe, '/healthz'],
      [c.readinessProbe, '/readyz'],
    ] as const) {
      assert.deepEqual(probe?.httpGet, { path, port: port.name, scheme: 'HTTP' });
    }
  });

  it('exposes that port alone through a Service that the ServiceMonitor scrapes over HTTP', () => {
    const service = one(objects, 'Service') as unknown as {
      spec: { ports: { name: string; port: number; targetPort: string }[] };
    };
    const healthPort = extenderSettings(objects).healthPort;
    assert.deepEqual(
      service.spec.ports.map((p) => [p.port, p.targetPort]),
      [[healthPort, 'http-metrics']],
    );
    const monitor = one(objects, 'ServiceMonitor') as unknown as {
      spec: { endpoints: { port: string; scheme: string; path: string }[] };
    };
    assert.deepEqual(
      monitor.spec.endpoints.map((e) => [e.port, e.scheme, e.path]),
      [[service.spec.ports[0].name, 'http', '/metrics']],
    );
  });
});

for (const what of renderings) {
  describe(`lifecycle of the pods, helm template ${what}`, () => {
    let objects: K8sObject[];
    let notes: string;
    before(async () => {
      ({ objects, notes } = await dryRunInstall(flagsOf(what)));
    });

    it('gives every container a startupProbe, after which liveness counts', () => {
      for (const c of podSpec(objects).containers) {
        assert.ok(c.startupProbe?.httpGet, c.name);
        const window = (c.startupProbe.periodSeconds ?? 10) * (c.startupProbe.failureThreshold ?? 3);
        assert.ok(window >= 60, `${c.name}: ${window} s to start`);
      }
    });

    it("gives the pod a termination grace that covers kube-scheduler's httpTimeout and, when it binds, the bind timeout", () => {
      const settings = extenderSettings(objects);
      const grace = podSpec(objects).terminationGracePeriodSeconds ?? 30;
      const { httpTimeoutSeconds: httpTimeout, binds } = extenderEntry(objects, notes);
      if (binds)
        assert.ok(grace >= settings.bindTimeoutSeconds, `${grace} s >= bind timeout ${settings.bindTimeoutSeconds} s`);
      assert.ok(grace > httpTimeout, `${grace} s > httpTimeout ${httpTimeout} s`);
      // The extender's own limit ends the process before kubelet's SIGKILL would.
      assert.ok(settings.shutdownGraceSeconds >= httpTimeout && settings.shutdownGraceSeconds < grace);
    });
  });
}

describe('cert-manager: explicit lifetimes and renewal, and kube-scheduler reading its certificate from the Secret', () => {
  interface Certificate {
    metadata: { name: string };
    spec: { duration: string; renewBefore: string; isCA?: boolean; privateKey?: { rotationPolicy?: string } };
  }
  const hours = (d: string) => Number(d.replace(/h$/, ''));

  it('sets duration and renewBefore on every Certificate, renewal well before expiry; the CA keeps its key', async () => {
    const objects = await renderChart(['-f', `${CHART}/ci/extender-cert-manager-values.yaml`]);
    const certificates = find(objects, 'Certificate') as unknown as Certificate[];
    assert.equal(certificates.length, 3);
    for (const c of certificates) {
      assert.match(c.spec.duration, /^\d+h$/, c.metadata.name);
      assert.ok(hours(c.spec.renewBefore) < hours(c.spec.duration), c.metadata.name);
      assert.equal(c.spec.privateKey?.rotationPolicy, c.spec.isCA ? 'Never' : 'Always', c.metadata.name);
    }
    const client = certificates.find((c) => c.metadata.name.endsWith('-scheduler-client'));
    assert.deepEqual([client?.spec.duration, client?.spec.renewBefore], ['2160h', '360h'], 'from the values');
  });

  it('refuses renewBefore not shorter than duration', async () => {
    await assert.rejects(
      renderChart(['--set', 'tls.certManager.renewBefore=9000h']),
      /tls.certManager.renewBefore \(9000h\) must be shorter than tls.certManager.duration \(8760h\)/,
    );
  });

  it('NOTES.txt mounts the client Secret into kube-scheduler at the paths of certFile and keyFile', async () => {
    const { notes } = await dryRunInstall(['--set', 'mode=extender', '--set', 'tls.provider=cert-manager']);
    const secret = /secretName: (\S+)/.exec(notes)?.[1];
    assert.equal(secret, 'rel-topology-extender-scheduler-client');
    const mountPath = /mountPath: (\S+)/.exec(notes)?.[1];
    const entry = (
      parseYaml(notes.slice(notes.indexOf('extenders:'))) as {
        extenders: { tlsConfig: { certFile: string; keyFile: string } }[];
      }
    ).extenders[0];
    assert.equal(entry.tlsConfig.certFile, `${mountPath}/tls.crt`);
    assert.equal(entry.tlsConfig.keyFile, `${mountPath}/tls.key`);
    assert.match(notes, /valid 8760h, renewed 720h before it expires/);
    assert.match(
      notes,
      /get certificate rel-topology-extender-scheduler-client -o jsonpath='\{\.status\.renewalTime\}'/,
    );
    // A static pod's copy: a command for each of the two files it names, writing it where certFile and keyFile say.
    assert.match(notes, /copy tls\.crt and tls\.key to\s+\/etc\/kubernetes\/topology-extender\//);
    for (const [key, path] of [
      ['crt', entry.tlsConfig.certFile],
      ['key', entry.tlsConfig.keyFile],
    ])
      assert.ok(
        notes.includes(`get secret ${secret} -o jsonpath='{.data.tls\\.${key}}' | base64 -d > ${path}`),
        `NOTES.txt prints the command that copies tls.${key}`,
      );
  });
});

describe('the image: clearly defaulted, refused plainly when wrong', () => {
  it('defaults to the local build name at the chart version, and NOTES.txt says where that pulls', async () => {
    const { objects, notes } = await dryRunInstall([]);
    assert.equal(extenderContainer(objects).image, 'topology-extender:0.1.0');
    assert.match(
      notes,
      /name of a local build.*kind load docker-image.*image\.repository=REGISTRY\/topology-extender/s,
    );
    const pushed = await dryRunInstall(['--set', 'image.repository=registry.example.com/team/topology-extender']);
    assert.equal(extenderContainer(pushed.objects).image, 'registry.example.com/team/topology-extender:0.1.0');
    assert.doesNotMatch(pushed.notes, /local build/);
  });

  it('refuses an empty or malformed repository with what to set', async () => {
    await assert.rejects(renderChart(['--set', 'image.repository=']), /image.repository is required: .*REGISTRY/);
    for (const bad of ['https://registry.example.com/x', 'registry.example.com/x:1.0', 'Registry/X']) {
      await assert.rejects(
        renderChart(['--set', `image.repository=${bad}`]),
        new RegExp(`image.repository "${bad.replace(/[.:/]/g, '\\$&')}" is not an image name`),
      );
    }
  });
});

describe('PrometheusRule and Grafana dashboard', () => {
  let served: TestExtender;
  let exported: Set<string>;
  before(async () => {
    served = await createTestExtender([]);
    const text = (await served.request.get('/metrics')).text;
    exported = new Set();
    for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      exported.add(name);
      if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) exported.add(name + s);
    }
  });
  after(async () => {
    await served.close();
  });

  /** Each expression parses as PromQL; returns the metric names it selects. */
  const metricNames = (expr: string): string[] => {
    const tree = promql.parse(expr);
    const names: string[] = [];
    tree.iterate({
      enter: (node) => {
        assert.ok(!node.type.isError, `PromQL error at ${node.from} in ${expr}`);
        if (node.name === 'VectorSelector') {
          const id = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(expr.slice(node.from, node.to));
          if (id) names.push(id[0]);
        }
      },
    });
    return names;
  };
  /** kube-state-metrics' node count and Prometheus' own `up` are the only series from elsewhere. */
  const assertExported = (names: string[], where: string) => {
    for (const n of names) {
      if (n === 'up' || n === 'kube_node_info') continue;
      assert.ok(exported.has(n), `${where}: ${n} is not a metric src/http/metrics.ts exports`);
    }
  };

  it('are off by default', async () => {
    const objects = await renderChart([]);
    assert.equal(find(objects, 'PrometheusRule').length, 0);
    assert.equal(find(objects, 'ConfigMap', '-dashboard').length, 0);
  });

  for (const mode of ['scheduler', 'extender']) {
    it(`alert, in mode ${mode}, on latency near the timeouts, dropped and failed verbs and cache divergence, in valid PromQL over exported metrics`, async () => {
      const flags = [
        '--set',
        `mode=${mode}`,
        '--set',
        'prometheusRule.enabled=true',
        '--set',
        'pendingReport.enabled=true',
      ];
      const objects = await renderChart(flags);
      const rule = one(objects, 'PrometheusRule') as unknown as {
        spec: { groups: { rules: { alert: string; expr: string; for: string }[] }[] };
      };
      const rules = rule.spec.groups.flatMap((g) => g.rules);
      const byName = Object.fromEntries(rules.map((r) => [r.alert, r]));
      for (const name of [
        'TopologyExtenderVerbLatencyNearTimeout',
        'TopologyExtenderBindLatencyNearTimeout',
        'TopologyExtenderVerbsDropped',
        'TopologyExtenderWatchStale',
        'TopologyExtenderReplicasDisagree',
        'TopologyExtenderCacheBehindApi',
      ]) {
        assert.ok(byName[name], name);
      }
      for (const r of rules) {
        assertExported(metricNames(r.expr), r.alert);
        assert.match(r.expr, /job="rel-topology-extender",namespace="kube-system"/, `${r.alert} selects this release`);
      }
      // Thresholds: latencyRatio (0.8) of kube-scheduler's httpTimeout (630 s delegated), and of bindTimeoutSeconds.
      assert.match(byName.TopologyExtenderVerbLatencyNearTimeout.expr, /> 504$/);
      assert.match(byName.TopologyExtenderBindLatencyNearTimeout.expr, /> 480$/);
    });
  }

  it("renders the alert on the pending report's series exactly when the report runs: without it they are never exported", async () => {
    // A pod that fits nowhere, rejected by a volume plugin: the report (when it runs) counts it.
    const cluster = [
      node('n1'),
      storageClass('local'),
      claim('data', { size: '50Gi' }),
      pod('p', { claims: ['data'] }),
    ];
    for (const enabled of [false, true]) {
      const objects = await renderChart([
        '--set',
        'prometheusRule.enabled=true',
        '--set',
        `pendingReport.enabled=${enabled}`,
      ]);
      const rules = (
        one(objects, 'PrometheusRule') as unknown as {
          spec: { groups: { rules: { alert: string; expr: string }[] }[] };
        }
      ).spec.groups.flatMap((g) => g.rules);
      const pendingAlerts = rules.filter((r) => /topology_extender_pending_/.test(r.expr)).map((r) => r.alert);
      assert.deepEqual(
        pendingAlerts,
        enabled ? ['TopologyExtenderPodsPendingOnVolumes'] : [],
        `pendingReport ${enabled}`,
      );
      // The storage alert's series come from the store on each scrape, report or not.
      assert.ok(rules.some((r) => r.alert === 'TopologyExtenderStorageClassExhausted'));
      const settings = extenderSettings(objects);
      assert.equal(settings.pendingReport, enabled);
      const extender = await createTestExtender(cluster, { pendingReport: settings.pendingReport });
      try {
        if (enabled) await extender.extender.pending.idle();
        const metrics = (await extender.request.get('/metrics')).text;
        assert.equal(
          /^topology_extender_pending_pod_age_seconds_count\{plugin="VolumeBinding"\} 1$/m.test(metrics),
          enabled,
          `the pending series with pendingReport ${enabled}`,
        );
        assert.match(metrics, /^topology_extender_claims_waiting\{storage_class="local"\} 1$/m);
      } finally {
        await extender.close();
      }
    }
  });

  it('measures verb latency finely enough to tell a p99 near the default thresholds: finite buckets above 504 s', async () => {
    await served.request
      .post('/scheduler/filter')
      .send({ Pod: { metadata: { name: 'x', namespace: 'default', uid: 'x' } }, Nodes: null, NodeNames: [] })
      .expect(200);
    const text = (await served.request.get('/metrics')).text;
    const bounds = [
      ...text.matchAll(/^topology_extender_verb_duration_seconds_bucket\{le="([\d.]+)",verb="filter"\}/gm),
    ]
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    // histogram_quantile interpolates between the bucket below a threshold and one above it; with none above, the
    // p99 of a verb at the timeout would read as the largest bucket and never pass the threshold.
    assert.ok(bounds.some((b) => b >= 504) && bounds.some((b) => b < 480), `buckets ${bounds.join(', ')}`);
  });

  it('scales the latency thresholds with the values: filter-only httpTimeout and the ratio', async () => {
    const objects = await renderChart([
      '--set',
      'prometheusRule.enabled=true',
      '--set',
      'delegateVolumeBinding=false',
      '--set-json',
      'prometheusRule.latencyRatio=0.5',
      '--set',
      'extender.bindTimeoutSeconds=100',
    ]);
    const rules = (
      one(objects, 'PrometheusRule') as unknown as { spec: { groups: { rules: { alert: string; expr: string }[] }[] } }
    ).spec.groups.flatMap((g) => g.rules);
    const expr = (name: string) => rules.find((r) => r.alert === name)?.expr ?? '';
    assert.match(expr('TopologyExtenderVerbLatencyNearTimeout'), /> 15$/, '0.5 x httpTimeout 30 s');
    assert.match(expr('TopologyExtenderBindLatencyNearTimeout'), /> 50$/, '0.5 x bindTimeoutSeconds 100 s');
  });

  it('ship a dashboard of the verbs, the queue, the cache and storage capacity, whose queries parse and select exported metrics', async () => {
    const objects = await renderChart(['--set', 'grafanaDashboard.enabled=true']);
    const map = one(objects, 'ConfigMap', '-dashboard') as unknown as {
      metadata: { labels: Record<string, string> };
      data: Record<string, string>;
    };
    assert.equal(map.metadata.labels.grafana_dashboard, '1', "the label Grafana's sidecar loads");
    const dashboard = JSON.parse(map.data['topology-extender.json']) as {
      uid: string;
      panels: { title: string; description?: string; targets: { expr: string; refId: string }[]; gridPos: unknown }[];
      templating: { list: { name: string }[] };
    };
    assert.deepEqual(
      dashboard.templating.list.map((v) => v.name),
      ['datasource', 'namespace', 'job'],
    );
    const selected = new Set<string>();
    for (const panel of dashboard.panels) {
      assert.ok(panel.targets.length > 0 && panel.gridPos, panel.title);
      for (const t of panel.targets) {
        // Grafana's variables, as Grafana substitutes them before Prometheus sees the query.
        const expr = t.expr.replaceAll('$__rate_interval', '5m');
        const names = metricNames(expr);
        assertExported(names, panel.title);
        if (names.some((n) => n.startsWith('topology_extender_pending_')))
          assert.match(panel.description ?? '', /pendingReport\.enabled/, `${panel.title} says it needs the report`);
        for (const n of names) selected.add(n);
        assert.match(t.expr, /job="\$job",namespace="\$namespace"/, panel.title);
      }
    }
    for (const topic of [
      'topology_extender_verb_results_total',
      'topology_extender_verb_duration_seconds_bucket',
      'topology_extender_verb_dropped_total',
      'topology_extender_verb_queue_depth',
      'topology_extender_cache_nodes',
      'topology_extender_capacity_in_flight_bytes',
    ]) {
      assert.ok(selected.has(topic), `a panel for ${topic}`);
    }
  });
});

describe('memory: V8 heap within the limit the extender reads as its budget', () => {
  for (const mode of ['scheduler', 'extender']) {
    it(`mode ${mode}: NODE_OPTIONS sets --max-old-space-size from extender.maxOldSpaceSizeMiB, under limits.memory`, async () => {
      const objects = await renderChart(['--set', `mode=${mode}`, '--set', 'extender.maxOldSpaceSizeMiB=500']);
      const container = extenderContainer(objects) as {
        env?: { name: string; value?: string }[];
        resources?: { limits?: { memory?: string } };
      };
      const env = container.env?.find((e) => e.name === 'NODE_OPTIONS');
      assert.equal(env?.value, '--max-old-space-size=500');
      assert.equal(container.resources?.limits?.memory, '1Gi');
    });

    it(`mode ${mode}: glibc's mmap threshold is the one the image and the npm scripts set`, async () => {
      const container = extenderContainer(await renderChart(['--set', `mode=${mode}`])) as {
        env?: { name: string; value?: string }[];
      };
      const threshold = container.env?.find((e) => e.name === 'MALLOC_MMAP_THRESHOLD_')?.value;
      assert.match(threshold ?? '', /^\d+$/, 'the chart sets MALLOC_MMAP_THRESHOLD_');
      assert.match(readFileSync('Dockerfile', 'utf8'), new RegExp(`^ENV MALLOC_MMAP_THRESHOLD_=${threshold}$`, 'm'));
      const scripts = JSON.parse(readFileSync('package.json', 'utf8')).scripts;
      for (const script of ['start', 'serve']) {
        assert.ok(scripts[script].startsWith(`MALLOC_MMAP_THRESHOLD_=${threshold} exec node `), scripts[script]);
      }
    });
  }
});
