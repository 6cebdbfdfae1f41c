import { posix, win32 } from 'node:path';
import { jobErrors } from './job-errors.js';

/** How an interpreter takes a command or a script file (spec 4.8). */
export type InterpreterKind = 'posix' | 'cmd' | 'powershell' | 'tacoscript';

export interface Interpreter {
  /** Absolute path of the program. */
  path: string;
  kind: InterpreterKind;
  /** Arguments before the script file, from a `#!` line (e.g. `python3` of `#!/usr/bin/env python3`). */
  args: readonly string[];
}

/** What resolution needs from the machine; the real one reads PATH and the file system. */
export interface InterpreterHost {
  platform: NodeJS.Platform;
  /** `[interpreter-aliases]`: alias → name or absolute path. */
  aliases: Record<string, string>;
  /** Absolute path of a program name on PATH, or undefined. */
  find(name: string): Promise<string | undefined>;
  isExecutable(path: string): Promise<boolean>;
  /** The path with every symlink followed; the path itself when it cannot be resolved. */
  realPath(path: string): Promise<string>;
}

const pathFor = (platform: NodeJS.Platform) => (platform === 'win32' ? win32 : posix);

/** The kind follows the program: cmd.exe, anything with "powershell" in its path (Windows), tacoscript, else -c. */
export function interpreterKind(path: string, platform: NodeJS.Platform): InterpreterKind {
  const name = pathFor(platform)
    .basename(path)
    .toLowerCase()
    .replace(/\.exe$/, '');
  if (name === 'tacoscript') return 'tacoscript';
  if (platform !== 'win32') return 'posix';
  if (name === 'cmd') return 'cmd';
  if (path.toLowerCase().includes('powershell')) return 'powershell';
  return 'posix';
}

/**
 * Turns the job's `interpreter` into a program to run: '' is the platform default (sh found on PATH, or cmd.exe on
 * Windows); an alias from [interpreter-aliases] is replaced by its value; an absolute path must be an executable
 * file; any other name is looked up on PATH. Throws a `failed` job error saying what is missing.
 */
export async function resolveInterpreter(requested: string, host: InterpreterHost): Promise<Interpreter> {
  const aliased = Object.hasOwn(host.aliases, requested);
  const name = aliased ? (host.aliases[requested] ?? '') : requested;
  const source = aliased ? ` (alias "${requested}" in [interpreter-aliases])` : '';
  const windows = host.platform === 'win32';
  const path = pathFor(host.platform);
  let program: string | undefined;
  if (name === '') {
    const fallback = windows ? 'cmd.exe' : 'sh';
    program = await host.find(fallback);
    if (!program) throw jobErrors.failed(`the default interpreter ${fallback} is not on this client's PATH`);
  } else if (path.isAbsolute(name)) {
    if (!(await host.isExecutable(name)))
      throw jobErrors.failed(`interpreter ${name}${source} does not exist or is not an executable file`);
    program = name;
  } else if (name.includes('/') || (windows && name.includes('\\'))) {
    throw jobErrors.failed(
      `interpreter "${name}"${source} must be an absolute path, a program name on PATH or an alias ` +
        'from [interpreter-aliases]',
    );
  } else {
    program = await host.find(name);
    if (!program)
      throw jobErrors.failed(
        name === 'tacoscript'
          ? "interpreter tacoscript is not installed: no tacoscript program on this client's PATH"
          : `interpreter "${name}"${source} is not an alias in [interpreter-aliases] and no program of that ` +
              "name is on this client's PATH",
      );
  }
  return { path: program, kind: interpreterKind(program, host.platform), args: [] };
}

/**
 * The interpreter named by a script's `#!` line, when it names an absolute path; undefined otherwise. As the kernel
 * does, everything after the program is one argument.
 */
export function shebangOf(script: Buffer): { path: string; args: string[] } | undefined {
  if (script[0] !== 0x23 || script[1] !== 0x21) return undefined;
  const end = script.indexOf(0x0a);
  const line = script
    .subarray(2, end < 0 ? Math.min(script.length, 4096) : end)
    .toString('utf8')
    .trim();
  const match = /^(\S+)(?:\s+(.*))?$/.exec(line);
  const program = match?.[1];
  if (!program || !posix.isAbsolute(program)) return undefined;
  const rest = match[2]?.trim();
  return { path: program, args: rest ? [rest] : [] };
}
