/** Readings of a process from Linux's /proc. */
import { readFileSync } from 'node:fs';

/** USER_HZ: /proc counts CPU time in ticks of 1/100 s on Linux. */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time (user + system) the process has used so far, in ms; undefined when it cannot be read (gone). */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After "(comm)": the state is field 3 of the line, utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
