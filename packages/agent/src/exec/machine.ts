import { realpath } from 'node:fs/promises';
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

/** The interpreter host of this machine: its platform, PATH and file system. */
export function machineInterpreterHost(
  aliases: Record<string, string>,
  pathValue = process.env.PATH,
): InterpreterHost {
  return {
    platform: process.platform,
    aliases,
    find: pathLookup(pathValue),
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
