import { spawn } from 'node:child_process';
import { access, constants, stat } from 'node:fs/promises';
import { CodeDeliveryError, type CodeDelivery } from '../../core/two-factor/ports.js';

export interface ExecutableSettings {
  path: string;
  timeoutMs: number;
  /** PATH passed on to the program. */
  searchPath: string;
}

/** How much of the program's stderr is kept for the log. */
const STDERR_LIMIT = 4096;

/**
 * Runs the configured program from an argument list (never a shell string) with an environment holding only
 * SVC_2FA_TOKEN, SVC_2FA_SENDTO, SVC_2FA_TOKEN_TTL and PATH. Exit 0 means delivered.
 */
export function executableDelivery(settings: ExecutableSettings): CodeDelivery {
  return {
    method: 'script',
    send(message) {
      const env = {
        PATH: settings.searchPath,
        SVC_2FA_TOKEN: message.code,
        SVC_2FA_SENDTO: message.sendTo,
        SVC_2FA_TOKEN_TTL: String(message.ttlSeconds),
      };
      return new Promise((resolve, reject) => {
        const child = spawn(settings.path, [], {
          env,
          stdio: ['ignore', 'ignore', 'pipe'],
          timeout: settings.timeoutMs,
          killSignal: 'SIGKILL',
        });
        let stderr = '';
        child.stderr.setEncoding('utf8');
        child.stderr.on('data', (chunk: string) => {
          if (stderr.length < STDERR_LIMIT) stderr += chunk.slice(0, STDERR_LIMIT - stderr.length);
        });
        child.on('error', (err) =>
          reject(
            new CodeDeliveryError(`the delivery program ${settings.path} did not start: ${err.message}`),
          ),
        );
        child.on('close', (code, signal) => {
          if (code === 0) return resolve();
          const how = signal ? `was stopped by ${signal}` : `exited with code ${code}`;
          const limit = signal === 'SIGKILL' ? ` (limit ${settings.timeoutMs / 1000} s)` : '';
          reject(
            new CodeDeliveryError(`the delivery program ${settings.path} ${how}${limit}`, {
              cause: new Error(stderr.trim() || 'no output on stderr'),
            }),
          );
        });
      });
    },
  };
}

/** Start-up check: the program exists and may be run by svcd's account. */
export async function assertExecutable(path: string): Promise<void> {
  try {
    await access(path, constants.X_OK);
    if (!(await stat(path)).isFile()) throw new Error('it is not a regular file');
  } catch (err) {
    throw new Error(
      `[api] two_fa_token_delivery: ${path} is not an executable file svcd may run (${(err as Error).message})`,
      { cause: err },
    );
  }
}
