// The chart's alert rules as Prometheus itself reads them: `promtool check rules` on the rendered PrometheusRule's
// groups, and `promtool test rules` on series that should and should not fire the pending-report alerts (issue 33).
// promtool ships with Debian's prometheus package (or set PROMTOOL); without it these tests are skipped, saying so.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { one, renderChart } from '../helpers/chart.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const run = promisify(execFile);
const PROMTOOL = process.env.PROMTOOL ?? 'promtool';

async function promtoolMissing(): Promise<string | false> {
  try {
    await run(PROMTOOL, ['--version']);
    return false;
  } catch (err) {
    return `promtool not found (${(err as Error).message.split('\n')[0]}): apt-get install prometheus, or set PROMTOOL`;
  }
}

const skip = await promtoolMissing();

/** Where the storage alert sends the operator: the route while the pending report runs, else the CLI. */
const EXHAUSTED_DESCRIPTION = {
  on: 'GET /api/v1/storage shows the class per zone, GET /api/v1/pending?by=zone the pods waiting and the zones that still have room for them.',
  off: 'GET /api/v1/storage shows the class per zone; topology-extender pending --by zone, the pods waiting and the zones that still have room for them.',
};
const exhausted = (storageClass: string, zone: string, report: 'on' | 'off' = 'on') => ({
  exp_labels: { severity: 'warning', storage_class: storageClass, zone },
  exp_annotations: {
    summary: `Storage class ${storageClass} has no room left in zone ${zone} while claims of it wait to be bound.`,
    description: EXHAUSTED_DESCRIPTION[report],
  },
});
const SEL = 'job="rel-topology-extender",namespace="kube-system",pod="rel-topology-extender-0"';

describe('PrometheusRule under promtool', { skip }, () => {
  let dir: string;
  before(async () => {
    dir = await tempDir('promtool-');
    // rules.yaml with the pending report on (every alert), as the chart renders them by default; rules-off.yaml without it.
    for (const [file, enabled] of [
      ['rules.yaml', true],
      ['rules-off.yaml', false],
    ] as const) {
      const objects = await renderChart([
        '--set',
        'prometheusRule.enabled=true',
        '--set',
        `pendingReport.enabled=${enabled}`,
      ]);
      const rule = one(objects, 'PrometheusRule') as unknown as { spec: { groups: unknown[] } };
      await writeFile(join(dir, file), stringify({ groups: rule.spec.groups }));
    }
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('promtool check rules accepts every group, with the pending report on and off', async () => {
    for (const file of ['rules.yaml', 'rules-off.yaml']) {
      const { stdout } = await run(PROMTOOL, ['check', 'rules', join(dir, file)]);
      assert.match(stdout, /SUCCESS/, file);
    }
  });

  /** Runs `promtool test rules` on `rules` with these series (one sample a minute) and expectations. */
  const promtoolTest = async (rules: string, input_series: object[], alert_rule_test: object[]) => {
    const test = {
      rule_files: [rules],
      evaluation_interval: '1m',
      tests: [{ interval: '1m', input_series, alert_rule_test }],
    };
    await writeFile(join(dir, 'test.yaml'), stringify(test));
    try {
      await run(PROMTOOL, ['test', 'rules', join(dir, 'test.yaml')]);
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      assert.fail(`promtool test rules failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }
  };
  const series = (name: string, labels: string, values: string) => ({
    series: `${name}{${SEL},${labels}}`,
    values,
  });
  const storageSeries = [
    // local-storage: z1 has none available (3 bound), z2 has room; claims of the class wait.
    series('topology_extender_local_volumes', 'storage_class="local-storage",zone="z1",state="available"', '0x30'),
    series('topology_extender_local_volumes', 'storage_class="local-storage",zone="z1",state="bound"', '3x30'),
    series('topology_extender_local_volumes', 'storage_class="local-storage",zone="z2",state="available"', '2x30'),
    series('topology_extender_local_volumes', 'storage_class="local-storage",zone="z2",state="bound"', '1x30'),
    series('topology_extender_claims_waiting', 'storage_class="local-storage"', '2x30'),
    // fast-ssd: z1's capacity is gone and a claim waits; slow-hdd is gone too, but nothing waits for it.
    series('topology_extender_storage_capacity_bytes', 'storage_class="fast-ssd",zone="z1"', '0x30'),
    series('topology_extender_storage_capacity_bytes', 'storage_class="fast-ssd",zone="z2"', '1e12x30'),
    series('topology_extender_claims_waiting', 'storage_class="fast-ssd"', '1x30'),
    series('topology_extender_storage_capacity_bytes', 'storage_class="slow-hdd",zone="z1"', '0x30'),
    series('topology_extender_claims_waiting', 'storage_class="slow-hdd"', '0x30'),
  ];

  it('fires StorageClassExhausted for a zone out of local PVs or capacity while claims wait, and PodsPendingOnVolumes past 15 minutes', async () => {
    await promtoolTest(
      'rules.yaml',
      [
        ...storageSeries,
        // 3 pods rejected mostly by VolumeBinding, 1 of them younger than 15 minutes; 5 by CPU (not a volume reason).
        series('topology_extender_pending_pod_age_seconds_count', 'plugin="VolumeBinding"', '3x30'),
        series('topology_extender_pending_pod_age_seconds_bucket', 'plugin="VolumeBinding",le="900"', '1x30'),
        series('topology_extender_pending_pod_age_seconds_count', 'plugin="NodeResourcesFit"', '5x30'),
        series('topology_extender_pending_pod_age_seconds_bucket', 'plugin="NodeResourcesFit",le="900"', '0x30'),
      ],
      [
        { eval_time: '5m', alertname: 'TopologyExtenderStorageClassExhausted', exp_alerts: [] },
        {
          eval_time: '15m',
          alertname: 'TopologyExtenderStorageClassExhausted',
          exp_alerts: [exhausted('fast-ssd', 'z1'), exhausted('local-storage', 'z1')],
        },
        { eval_time: '2m', alertname: 'TopologyExtenderPodsPendingOnVolumes', exp_alerts: [] },
        {
          eval_time: '10m',
          alertname: 'TopologyExtenderPodsPendingOnVolumes',
          exp_alerts: [
            {
              exp_labels: { severity: 'warning', plugin: 'VolumeBinding' },
              exp_annotations: {
                summary: '2 pod(s) pending over 15 minutes, most nodes rejected by VolumeBinding.',
                description:
                  "topology-extender pending --by reason (GET /api/v1/pending?by=reason) gives kube-scheduler's line for each and the zones with room for their claims.",
              },
            },
          ],
        },
      ],
    );
  });

  it('fires StorageClassExhausted without the pending report too, pointing at the CLI rather than the route', async () => {
    await promtoolTest('rules-off.yaml', storageSeries, [
      {
        eval_time: '15m',
        alertname: 'TopologyExtenderStorageClassExhausted',
        exp_alerts: [exhausted('fast-ssd', 'z1', 'off'), exhausted('local-storage', 'z1', 'off')],
      },
    ]);
  });
});
