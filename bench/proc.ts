// bench-helper
// What a child process has cost, read from /proc: the benches that time other processes share it.
import { readFile } from 'node:fs/promises';

/**
 * A process's CPU time (user + system) in seconds, from /proc (clock ticks of 10 ms); with `mainThread`, its main
 * thread's only (the rest is V8's workers: concurrent GC marking and sweeping, compilation; and libuv's pool).
 */
export async function processCpuSeconds(pid: number, mainThread = false): Promise<number> {
  const stat = await readFile(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), from field 3 on: utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The whole machine's busy and idle CPU seconds so far (all cores, from /proc/stat's first line). */
export async function machineCpuSeconds(): Promise<{ busy: number; idle: number }> {
  const [, ...ticks] = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0].trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is counted in user already)
  const idle = ticks[3] + ticks[4];
  const busy = ticks.slice(0, 8).reduce((s, t) => s + t, 0) - idle;
  return { busy: busy / 100, idle: idle / 100 };
}
