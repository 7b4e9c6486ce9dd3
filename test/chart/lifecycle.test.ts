// docs/operating.md's Helm commands run as written against an API server (the in-memory one in test/helpers): install in
// both modes, release notes, upgrade keeping the generated certificates, uninstall leaving nothing behind.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { helm } from '../helpers/chart.ts';
import { HelmApiServer, type StoredObject } from '../helpers/helm-apiserver.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const operating = await readFile('docs/operating.md', 'utf8');
const command = (re: RegExp) => {
  const lines = operating.split('\n').filter((l) => re.test(l));
  assert.equal(lines.length, 1, `one docs/operating.md command matches ${re}`);
  return lines[0].split(/\s+/).slice(1);
};

let server: HelmApiServer;
let dir: string;
let kubeconfig: string;
const run = (args: string[]) => helm(args, kubeconfig);
const named = (kind: string, name: string) => server.list(kind).find((o) => o.metadata.name === name);
const chartObjects = () => [...server.objects.values()].filter((o) => o.kind !== 'Namespace');
const data = (o: StoredObject | undefined) => (o as { data?: Record<string, string> } | undefined)?.data;

before(async () => {
  server = new HelmApiServer();
  await server.start();
  dir = await tempDir('helm-lifecycle-');
  kubeconfig = await server.kubeconfig(dir);
});
after(async () => {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The bindVerb of the installed scheduler configuration's extender entry. */
const bindVerb = () =>
  (
    parseYaml(data(named('ConfigMap', 'topology-extender-config'))!['config.yaml']) as {
      extenders: { bindVerb?: string }[];
    }
  ).extenders[0].bindVerb;

describe('docs/operating.md: helm install, upgrade and uninstall', () => {
  it('installs mode scheduler, fully delegated (bindVerb), then uninstalls everything it created', async () => {
    await run(command(/^helm install topology-extender charts\/topology-extender --namespace kube-system$/));
    assert.equal(bindVerb(), 'bind');
    assert.ok(named('ClusterRoleBinding', 'topology-extender-kube-scheduler'));
    await run(command(/^helm uninstall /));
    assert.deepEqual(
      chartObjects().map((o) => `${o.kind} ${o.metadata.name}`),
      [],
    );
  });

  it('installs mode scheduler in the filter-only registration: kube-scheduler binds', async () => {
    await run(command(/^helm install .*delegateVolumeBinding=false$/));
    assert.equal(bindVerb(), undefined);
    await run(command(/^helm uninstall /));
    assert.equal(chartObjects().length, 0);
  });

  it('installs mode extender, prints the entry with its caData, upgrades keeping the certificates, uninstalls', async () => {
    await run(command(/^helm install .*--set mode=extender/));
    const tls = data(named('Secret', 'topology-extender-tls'));
    const client = data(named('Secret', 'topology-extender-scheduler-client'));
    assert.ok(tls?.['tls.crt'] && client?.['tls.crt']);

    const notes = await run(command(/^helm get notes /));
    assert.match(notes, new RegExp(`caData: ${tls['ca.crt'].replace(/[+/]/g, '\\$&')}`));

    await run(command(/^helm upgrade /));
    const deployment = named('Deployment', 'topology-extender') as unknown as {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    assert.equal(deployment.spec.template.spec.containers[0].image, 'topology-extender:0.1.1');
    assert.deepEqual(data(named('Secret', 'topology-extender-tls')), tls, 'serving certificate and CA kept');
    assert.deepEqual(data(named('Secret', 'topology-extender-scheduler-client')), client, 'client certificate kept');
    assert.match(await run(command(/^helm get notes /)), new RegExp(tls['ca.crt'].slice(0, 40)));

    await run(command(/^helm uninstall /));
    assert.equal(chartObjects().length, 0);
  });
});
