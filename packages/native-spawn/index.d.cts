/**
 * posix_spawnp of `file` with `args` (argv[0] included) and `env` ("NAME=value" entries), in `cwd` (null: the
 * caller's); stdin /dev/null, stdout and stderr two new pipes, a new session, default signal actions. Returns
 * [pid, stdout read fd, stderr read fd]; `onExit(code, signal)` runs once when the process has exited (code -1 when
 * a signal ended it; signal 0 when none did). Throws an Error with `code` (ENOENT, EACCES, …) when it cannot start.
 * null where the addon is not built (not Linux, no compiler at install).
 */
export declare const spawn:
  | ((
      file: string,
      args: readonly string[],
      env: readonly string[],
      cwd: string | null,
      onExit: (code: number, signal: number) => void,
    ) => [pid: number, stdoutFd: number, stderrFd: number])
  | null;
