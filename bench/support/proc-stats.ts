/** Readings of a process from Linux's /proc. */
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: /proc counts CPU time in ticks of 1/100 s on Linux. */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time a process has used so far, in ms: in its own code (user) and in the kernel on its behalf (system). */
export interface CpuTimes {
  userMs: number;
  systemMs: number;
}

/** The fields of /proc/<pid>/stat after "(comm) ", or undefined when the process is gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** User and system CPU time from the fields of a stat line. */
function timesOf(fields: string[]): CpuTimes {
  // The state is field 3 of the line (index 0 here); utime and stime are fields 14 and 15.
  const toMs = (ticks: string | undefined) => (Number(ticks) * 1000) / CLOCK_TICKS_PER_SECOND;
  return { userMs: toMs(fields[11]), systemMs: toMs(fields[12]) };
}

/** User and system CPU time of the process so far; undefined when it cannot be read (gone). */
export function processCpuTimes(pid: number | undefined): CpuTimes | undefined {
  const fields = pid === undefined ? undefined : statFields(pid);
  return fields && timesOf(fields);
}

/** CPU time (user + system) the process has used so far, in ms; undefined when it cannot be read (gone). */
export function processCpuMs(pid: number | undefined): number | undefined {
  const times = processCpuTimes(pid);
  return times && times.userMs + times.systemMs;
}

/**
 * CPU times of a process and all its live descendants (sshd forks a child per connection, and that child does
 * the work). Descendants that already exited are not counted.
 */
export function processTreeCpuTimes(pid: number | undefined): CpuTimes | undefined {
  const root = pid === undefined ? undefined : processCpuTimes(pid);
  if (!root) return undefined;
  const stats = new Map<number, string[]>();
  for (const entry of readdirSync('/proc')) {
    const fields = /^\d+$/.test(entry) ? statFields(Number(entry)) : undefined;
    if (fields) stats.set(Number(entry), fields);
  }
  const inTree = (candidate: number): boolean => {
    for (let p: number | undefined = candidate, hops = 0; p !== undefined && hops < 64; hops++) {
      if (p === pid) return true;
      const parent: string | undefined = stats.get(p)?.[1];
      p = parent === undefined ? undefined : Number(parent);
    }
    return false;
  };
  const total = { ...root };
  for (const [descendant, fields] of stats) {
    if (descendant === pid || !inTree(descendant)) continue;
    const times = timesOf(fields);
    total.userMs += times.userMs;
    total.systemMs += times.systemMs;
  }
  return total;
}

/** VmRSS of the process in KiB; undefined when it cannot be read (gone). */
export function processRssKiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Minor page faults of the process so far (field 10 of its stat line); undefined when it is gone. */
export function processMinorFaults(pid: number | undefined): number | undefined {
  const fields = pid === undefined ? undefined : statFields(pid);
  // minflt is field 10 of the line, index 7 here (see timesOf).
  return fields && Number(fields[7]);
}

/**
 * Runs `work` (e.g. a process's graceful stop) and reads the process's CPU time every `everyMs` meanwhile: resolves
 * with the CPU it used from the start until the last reading before it exited (ms), against the wall time. On two
 * shared cores the two differ by what the other processes (simulated agents reconnecting) took.
 */
export async function cpuWhile(
  pid: number | undefined,
  work: () => Promise<unknown>,
  everyMs = 50,
): Promise<{ wallMs: number; cpuMs: number | undefined }> {
  const first = processCpuMs(pid);
  let last = first;
  const timer = setInterval(() => {
    last = processCpuMs(pid) ?? last;
  }, everyMs);
  const start = performance.now();
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  const wallMs = performance.now() - start;
  return { wallMs, cpuMs: first === undefined || last === undefined ? undefined : last - first };
}

/**
 * CPU time (ms) of every process on the machine so far, summed by the group `groupOf` gives it from its pid and
 * command line (undefined: not counted). Taken before and after a measurement, it shows where the machine's CPU
 * went: the server, the simulated agents, the database, the broker.
 */
export function cpuByGroup(
  groupOf: (pid: number, commandLine: string) => string | undefined,
): Map<string, number> {
  const totals = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    let commandLine: string;
    try {
      commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    const group = groupOf(pid, commandLine);
    const fields = group === undefined ? undefined : statFields(pid);
    if (group === undefined || !fields) continue;
    const times = timesOf(fields);
    totals.set(group, (totals.get(group) ?? 0) + times.userMs + times.systemMs);
  }
  return totals;
}

/** CPU time (ms) by group since `before` (a cpuByGroup reading with the same `groupOf`). */
export function cpuByGroupSince(
  before: ReadonlyMap<string, number>,
  groupOf: (pid: number, commandLine: string) => string | undefined,
): Record<string, number> {
  return Object.fromEntries(
    [...cpuByGroup(groupOf)].map(([group, total]) => [group, total - (before.get(group) ?? 0)]),
  );
}
