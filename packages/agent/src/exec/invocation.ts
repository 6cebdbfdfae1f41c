import type { Interpreter, InterpreterKind } from './interpreter.js';
import { jobErrors } from './job-errors.js';

/** A program and its arguments, spawned without any shell of ours in between. */
export interface Invocation {
  file: string;
  args: string[];
  /** Windows only: pass the arguments unquoted (cmd.exe parses `/c "<command>"` itself). */
  windowsVerbatimArguments: boolean;
}

const POWERSHELL_FLAGS = ['-Noninteractive', '-executionpolicy', 'bypass'];

/** `<interpreter> -c <command>`; cmd.exe gets `/d /s /c "<command>"`, PowerShell `-Command <command>`. */
export function commandInvocation(interpreter: Interpreter, command: string): Invocation {
  const { path, kind } = interpreter;
  switch (kind) {
    case 'cmd':
      return { file: path, args: ['/d', '/s', '/c', `"${command}"`], windowsVerbatimArguments: true };
    case 'powershell':
      return {
        file: path,
        args: [...POWERSHELL_FLAGS, '-Command', command],
        windowsVerbatimArguments: false,
      };
    case 'tacoscript':
      throw jobErrors.failed('tacoscript runs task files only: send the tasks as a script, not as a command');
    case 'posix':
      return { file: path, args: ['-c', command], windowsVerbatimArguments: false };
  }
}

/** `<interpreter> <file>`; cmd.exe gets `/d /c <file>`, PowerShell `-Noninteractive -executionpolicy bypass -File`. */
export function scriptInvocation(interpreter: Interpreter, scriptPath: string): Invocation {
  const { path, kind, args } = interpreter;
  switch (kind) {
    case 'cmd':
      return { file: path, args: ['/d', '/c', scriptPath], windowsVerbatimArguments: false };
    case 'powershell':
      return {
        file: path,
        args: [...POWERSHELL_FLAGS, '-File', scriptPath],
        windowsVerbatimArguments: false,
      };
    case 'tacoscript':
    case 'posix':
      return { file: path, args: [...args, scriptPath], windowsVerbatimArguments: false };
  }
}

/** The script file's extension, which cmd.exe, PowerShell and tacoscript go by. */
export function scriptExtension(kind: InterpreterKind): string {
  return { cmd: '.bat', powershell: '.ps1', tacoscript: '.yml', posix: '' }[kind];
}

/**
 * `sudo -n <program> <args>`: never asks for a password, fails instead. The job's own variables (`keep`, names
 * only) are kept through sudo's environment reset with --preserve-env.
 */
export function withSudo(invocation: Invocation, sudoPath: string, keep: readonly string[] = []): Invocation {
  const preserve = keep.length === 0 ? [] : [`--preserve-env=${keep.join(',')}`];
  return { ...invocation, file: sudoPath, args: ['-n', ...preserve, invocation.file, ...invocation.args] };
}

/** The command line as the filters see it: program and arguments joined by spaces. */
export function commandLineText(invocation: Invocation): string {
  return [invocation.file, ...invocation.args].join(' ');
}
