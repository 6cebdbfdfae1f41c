import { readdirSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';

/**
 * RLIMIT_NOFILE of this process (Infinity for unlimited), from `Max open files` of /proc/self/limits; undefined off
 * Linux or when unreadable. Node raises the soft limit to the hard one when it starts (node.cc, PlatformInit), so
 * the hard limit is what the administrator sets.
 */
export function readDescriptorLimit(): { soft: number; hard: number } | undefined {
  try {
    const line = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (!line) return undefined;
    const parse = (value: string | undefined) => (value === 'unlimited' ? Infinity : Number(value));
    return { soft: parse(line[1]), hard: parse(line[2]) };
  } catch {
    return undefined;
  }
}

/**
 * Descriptors this process has open: the entries of /proc/self/fd, less the one reading it. Blocks while it lists
 * them: for the few open at start.
 * Undefined where there is no /proc. At the limit the read itself needs a descriptor and fails: 'exhausted'.
 */
export function countOpenDescriptors(): number | 'exhausted' | undefined {
  try {
    return readdirSync('/proc/self/fd').length - 1;
  } catch (err) {
    return isDescriptorExhaustion(err) ? 'exhausted' : undefined;
  }
}

/**
 * countOpenDescriptors without blocking the event loop: the listing runs in libuv's thread pool. It is slow where
 * many are open (320 ms for 8,000 on the 2-vCPU test machine, under load), so count rarely.
 */
export async function countOpenDescriptorsInPool(): Promise<number | 'exhausted' | undefined> {
  try {
    return (await readdir('/proc/self/fd')).length - 1;
  } catch (err) {
    return isDescriptorExhaustion(err) ? 'exhausted' : undefined;
  }
}

/** EMFILE (this process is at its descriptor limit) or ENFILE (the system is). */
export function isDescriptorExhaustion(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'EMFILE' || code === 'ENFILE';
}
