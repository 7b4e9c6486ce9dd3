// The real Kubernetes components the end-to-end suites and benches run: etcd, kube-apiserver,
// kube-controller-manager, a kube-scheduler per supported minor and KWOK's controller (the kubelets of simulated
// nodes), built from this folder's pinned Go modules (go.mod for the newest control plane, go.v1.NN.mod for each older
// kube-scheduler, kwok/go.mod for KWOK) on first use and cached outside the work tree, keyed by what went into them, so
// a fresh clone on the same machine reuses them.
//
// Without a Go toolchain the suites skip with that reason; a build that fails fails them with Go's own output.
// `node test/components/components.ts` builds everything ahead (test/run.ts does, before any test file starts).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const HERE = fileURLToPath(new URL('.', import.meta.url));
/**
 * The module files under this folder and what each builds, with the module whose release names the binaries: the
 * first builds the whole control plane, the next two kube-scheduler only. KWOK is a module of its own (kwok/go.mod):
 * its k8s.io modules are older than the control plane's, and in this folder's module `go mod tidy` would add them.
 */
const MODULES = [
  {
    modfile: 'go.mod',
    pin: 'k8s.io/kubernetes',
    components: ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'],
  },
  { modfile: 'go.v1.36.mod', pin: 'k8s.io/kubernetes', components: ['kube-scheduler'] },
  { modfile: 'go.v1.35.mod', pin: 'k8s.io/kubernetes', components: ['kube-scheduler'] },
  { modfile: 'kwok/go.mod', pin: 'sigs.k8s.io/kwok', components: ['kwok'] },
] as const;

type Module = (typeof MODULES)[number];

type Name = (typeof MODULES)[number]['components'][number];

export interface Component {
  name: Name;
  path: string;
  /**
   * The Kubernetes release it was built from (etcd: the release of the control plane it came with), e.g. v1.37.2;
   * KWOK: its own release, e.g. v0.8.0.
   */
  version: string;
}

export interface KubeComponents {
  etcd: Component;
  kubeApiserver: Component;
  kubeControllerManager: Component;
  /** One per supported minor, newest first. */
  kubeSchedulers: Component[];
  /** KWOK's controller (`kwok`): node heartbeats and leases, pods that run and finish, for simulated nodes. */
  kwok: Component;
}

export type Found = { components: KubeComponents; skip?: undefined } | { components?: undefined; skip: string };

/** Where built binaries live: $TOPOLOGY_EXTENDER_KUBE_CACHE, else the user's cache directory. */
export const CACHE =
  process.env.TOPOLOGY_EXTENDER_KUBE_CACHE ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'topology-extender', 'kube');

/**
 * Linker flags: no symbol table or DWARF (a third of the size; tests read no stack symbols), and for Kubernetes `-X`
 * flags that make `--version`, `/version` and the User-Agent name the release, as upstream's build does (KWOK's
 * release is a constant in its source).
 */
function linkerFlags(pin: Module['pin'], version: string): string {
  if (pin !== 'k8s.io/kubernetes') return '-s -w';
  const [major, minor] = version.slice(1).split('.');
  const stamps = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
    `-X ${pkg}.gitVersion=${version}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
  ]);
  return ['-s', '-w', ...stamps].join(' ');
}

async function goVersion(): Promise<string | undefined> {
  try {
    return (await run('go', ['env', 'GOVERSION'], { timeout: 30_000 })).stdout.trim();
  } catch {
    return undefined;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** The release of `pin` (k8s.io/kubernetes, sigs.k8s.io/kwok) a module file requires. */
async function pinnedRelease(modfile: string, pin: Module['pin']): Promise<{ mod: string; version: string }> {
  const mod = await readFile(join(HERE, modfile), 'utf8');
  const version = new RegExp(`^\\s*(?:require\\s+)?${pin.replaceAll('.', '\\.')} (v\\S+)`, 'm').exec(mod)?.[1];
  if (!version) throw new Error(`${modfile} does not require ${pin}`);
  return { mod, version };
}

/** The kube-scheduler releases the suites run, newest first, as pinned (no Go needed to read them). */
export async function kubeSchedulerReleases(): Promise<string[]> {
  const modfiles = MODULES.filter((m) => (m.components as readonly string[]).includes('kube-scheduler'));
  return Promise.all(modfiles.map(async (m) => (await pinnedRelease(m.modfile, m.pin)).version));
}

/**
 * Builds `name` from its module unless the cache has it; concurrent callers wait on one lock instead of building
 * twice. A module file beside this one builds `./NAME`; one in a folder of its own (kwok/go.mod) builds that folder.
 */
async function component(
  { modfile, pin }: Module,
  name: Name,
  go: string,
  log: (line: string) => void,
): Promise<Component> {
  const { mod, version } = await pinnedRelease(modfile, pin);
  const sum = await readFile(join(HERE, modfile.replace(/\.mod$/, '.sum')), 'utf8');
  const main = await readFile(join(HERE, name, 'main.go'), 'utf8');
  const [dir, file, pkg] = modfile.includes('/')
    ? [join(HERE, dirname(modfile)), basename(modfile), '.']
    : [HERE, modfile, `./${name}`];
  const key = createHash('sha256').update(`${go}\0${mod}\0${sum}\0${main}`).digest('hex').slice(0, 12);
  const path = join(CACHE, `${name}-${version}-${key}`);
  if (!(await exists(path))) {
    await mkdir(CACHE, { recursive: true });
    log(`building ${name} ${version} from test/components/${modfile} (first use: minutes; cached in ${CACHE})`);
    const started = performance.now();
    // Under flock, the second caller finds the binary the first one built; the rename is atomic.
    const script = `[ -x "$1" ] || { go build -modfile="$2" -trimpath -ldflags="$3" -o "$1.partial" "$4" && mv "$1.partial" "$1"; }`;
    try {
      await run('flock', [`${path}.lock`, 'sh', '-c', script, 'build', path, file, linkerFlags(pin, version), pkg], {
        cwd: dir,
        env: { ...process.env, CGO_ENABLED: '0' },
        maxBuffer: 16 << 20,
        timeout: 60 * 60_000,
      });
    } catch (err) {
      const { stderr } = err as { stderr?: string };
      throw new Error(`cannot build ${name} ${version} from test/components/${modfile}: ${stderr || err}`);
    }
    log(`built ${name} ${version} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  return { name, path, version };
}

let found: Promise<Found> | undefined;

/** Every component, built if need be (one at a time: two Go builds on two cores only take turns). */
export function kubeComponents(log: (line: string) => void = (line) => console.error(line)): Promise<Found> {
  found ??= (async (): Promise<Found> => {
    const go = await goVersion();
    if (!go) {
      return {
        skip: 'no Go toolchain (go not on PATH): the real-control-plane suites build etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK from test/components with Go >= 1.26',
      };
    }
    const built: Component[] = [];
    for (const module of MODULES) {
      for (const name of module.components) built.push(await component(module, name, go, log));
    }
    const the = (name: Name) => built.find((c) => c.name === name)!;
    return {
      components: {
        etcd: the('etcd'),
        kubeApiserver: the('kube-apiserver'),
        kubeControllerManager: the('kube-controller-manager'),
        kubeSchedulers: built.filter((c) => c.name === 'kube-scheduler'),
        kwok: the('kwok'),
      },
    };
  })();
  return found;
}

if (import.meta.main) {
  const { components, skip } = await kubeComponents();
  if (!components) console.error(`skipped: ${skip}`);
  else for (const c of Object.values(components).flat()) console.log(`${c.name} ${c.version} ${c.path}`);
}
