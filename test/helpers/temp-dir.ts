// Scratch directories for tests, removed when the test process exits (node --test runs each file in its own
// process), so a run leaves nothing in /tmp whether a test passes, fails or never reaches its own clean-up.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
process.once('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A new empty directory under the system's temp directory, named `${prefix}XXXXXX`. */
export async function tempDir(prefix: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
