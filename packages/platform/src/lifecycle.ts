import type { LineLogger } from './line-logger.js';

/** The part of `process` that onShutdown uses; tests pass a fake. */
export interface ShutdownProcess {
  on(event: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  removeListener(event: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

export interface ShutdownOptions {
  /** Exit with 1 when the handler has not finished after this long; default 10 s. */
  timeoutMs?: number;
  signals?: NodeJS.Signals[];
  process?: ShutdownProcess;
  logger?: Pick<LineLogger, 'info' | 'warn' | 'error'>;
}

/**
 * On the first SIGTERM/SIGINT runs `handler` once and exits 0 when it resolves, 1 when it throws or
 * overruns the timeout; a second signal exits 1 at once. Returns a function that removes the listeners.
 */
export function onShutdown(
  handler: (signal: NodeJS.Signals) => Promise<void>,
  options: ShutdownOptions = {},
): () => void {
  const proc: ShutdownProcess = options.process ?? process;
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  const timeoutMs = options.timeoutMs ?? 10_000;
  const log = options.logger;
  let started = false;
  let exited = false;
  let timer: NodeJS.Timeout | undefined;

  const exit = (code: number) => {
    if (exited) return;
    exited = true;
    clearTimeout(timer);
    proc.exit(code);
  };

  const listener = (signal: NodeJS.Signals) => {
    if (started) {
      log?.warn({ signal }, 'second signal during shutdown; exiting now');
      exit(1);
      return;
    }
    started = true;
    log?.info({ signal }, 'shutting down');
    timer = setTimeout(() => {
      log?.error({ timeoutMs }, 'shutdown did not finish in time; exiting');
      exit(1);
    }, timeoutMs);
    // Inside an async function a synchronous throw from the handler becomes a rejection too.
    const run = async () => handler(signal);
    run().then(
      () => exit(0),
      (err: unknown) => {
        log?.error({ err }, 'shutdown failed');
        exit(1);
      },
    );
  };

  for (const signal of signals) proc.on(signal, listener);
  return () => {
    for (const signal of signals) proc.removeListener(signal, listener);
  };
}
