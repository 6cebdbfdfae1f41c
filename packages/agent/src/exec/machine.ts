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
  return { platform: process.platform, aliases, find: pathLookup(pathValue), isExecutable: isExecutableFile };
}
