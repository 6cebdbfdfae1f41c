import { realpath } from 'node:fs/promises';
import { monotonicMs } from '@svc/platform';
import { findOnPath, isExecutableFile } from './find-executable.js';
import type { InterpreterHost } from './interpreter.js';

/** Program lookup on this machine's PATH (with PATHEXT on Windows). */
export function pathLookup(
  pathValue: string | undefined,
  platform: NodeJS.Platform = process.platform,
  pathExt = process.env.PATHEXT,
): (name: string) => Promise<string | undefined> {
  const extensions = platform === 'win32' ? ['', ...(pathExt ?? '.COM;.EXE;.BAT;.CMD').split(';')] : [''];
  return (name) => findOnPath(name, pathValue, extensions);
}

/** How long a program found on PATH stays the answer (while it is an executable file) before PATH is searched again. */
export const PATH_LOOKUP_TTL_MS = 60_000;

/** How long a remembered program, just checked, is taken as still there without checking again. */
const RECHECK_MS = 1_000;

/**
 * `lookup` remembering what it found: a program found before is checked to still be an executable file (two file
 * system calls) instead of PATH being searched again (a failing stat for each folder before its own, each an
 * error object, then a realpath), and within RECHECK_MS of its last check not even that. A program that is gone,
 * or an answer older than `ttlMs`, searches again, so a program installed earlier on PATH is found within `ttlMs`,
 * as a shell's command hash would after `hash -r`. Names not found are not remembered.
 */
export function rememberedLookup(
  lookup: (name: string) => Promise<string | undefined>,
  isExecutable: (path: string) => Promise<boolean> = isExecutableFile,
  ttlMs = PATH_LOOKUP_TTL_MS,
  now: () => number = monotonicMs,
): (name: string) => Promise<string | undefined> {
  const found = new Map<string, { path: string; at: number; checkedAt: number }>();
  return async (name) => {
    const known = found.get(name);
    const at = now();
    if (known && at - known.at < ttlMs) {
      // Commands in a row: a check a moment ago still holds (a program removed since fails to start, clearly).
      if (at - known.checkedAt < RECHECK_MS) return known.path;
      if (await isExecutable(known.path)) {
        known.checkedAt = at;
        return known.path;
      }
    }
    found.delete(name);
    const path = await lookup(name);
    if (path !== undefined) found.set(name, { path, at: now(), checkedAt: now() });
    return path;
  };
}

/** The interpreter host of this machine: its platform, PATH and file system. */
export function machineInterpreterHost(
  aliases: Record<string, string>,
  pathValue = process.env.PATH,
): InterpreterHost {
  return {
    platform: process.platform,
    aliases,
    find: rememberedLookup(pathLookup(pathValue)),
    isExecutable: isExecutableFile,
    realPath: (path) => realpath(path).catch(() => path),
  };
}

/**
 * Variables of the agent's environment that jobs never see: the agent's own credentials, and the malloc tuning
 * its systemd unit sets for the agent's memory (packaging/systemd/svc.service), which is not the jobs' business.
 */
const PRIVATE_VARIABLES = ['SVC_AUTH', 'MALLOC_MMAP_THRESHOLD_'];

/** The environment jobs run with: the agent's, without its private variables. */
export function jobProcessEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const copy = { ...env };
  for (const name of PRIVATE_VARIABLES) delete copy[name];
  return copy;
}
