// The OpenAPI document exactly as the server serves it at /openapi.json, rendered without a cluster.
import { pino } from 'pino';
import { ClusterStateSource } from './cluster/state-file/source.ts';
import { ClusterStateWriter } from './cluster/state-file/writer.ts';
import { defaultSettings } from './config.ts';
import { createExtender } from './wiring.ts';

export async function renderOpenApi(): Promise<{ json: string; yaml: string }> {
  const source = new ClusterStateSource({ file: 'examples/cluster.yaml', watch: false });
  const extender = await createExtender({
    settings: defaultSettings(),
    source,
    writer: new ClusterStateWriter(source),
    logger: pino({ level: 'silent' }),
  });
  await extender.app.ready();
  const doc = extender.app.swagger();
  const yaml = extender.app.swagger({ yaml: true });
  await extender.app.close();
  return { json: `${JSON.stringify(doc, null, 2)}\n`, yaml };
}
