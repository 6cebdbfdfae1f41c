import { createLogger, onShutdown, type Logger } from '@svc/platform';
import { loadSvcdConfig, type SvcdConfig } from '../config/schema.js';
import { startServer, type RunningServer } from '../server.js';
import { resolveConfigPaths } from './resolve-paths.js';
import { reportOpenFileLimit, surviveDescriptorExhaustion } from './open-file-limit.js';

/** What the stop after a drain may take (onShutdown's default for the whole stop). */
const SHUTDOWN_TIMEOUT_MS = 10_000;

/** Loads a config file; keys written for OpenRPort that svcd ignores are reported on stderr. */
export function loadConfig(path: string): SvcdConfig {
  const warn = (message: string) => process.stderr.write(`svcd: warning: ${path}: ${message}\n`);
  return resolveConfigPaths(loadSvcdConfig(path, warn), path);
}

/** Starts svcd from a loaded config and keeps it running until SIGTERM/SIGINT. */
export async function runServer(config: SvcdConfig): Promise<RunningServer> {
  const logger: Logger = createLogger({
    name: 'svcd',
    level: config.logging.log_level,
    ...(config.logging.log_file ? { file: config.logging.log_file } : {}),
  });
  if (process.getuid?.() === 0) {
    logger.warn(
      'svcd is running as root; run it as an unprivileged user (ports above 1024 need no privileges)',
    );
  }
  surviveDescriptorExhaustion(logger);
  reportOpenFileLimit(logger);
  // Handlers go in before the listeners open: a SIGUSR1 without a handler would start Node's inspector.
  const started: { server?: RunningServer } = {};
  process.on('SIGUSR1', () => {
    if (!started.server) return logger.warn('SIGUSR1 ignored: svcd is still starting');
    started.server.reloadUsers().then(
      () => logger.info('user file reloaded'),
      (err: unknown) => logger.error({ err }, 'user file reload failed; keeping the users loaded before'),
    );
  });
  onShutdown(
    async (signal) => {
      logger.info({ signal }, 'shutting down');
      // In a cluster the agents first move to the other nodes (rolling upgrade); a single node just stops.
      await started.server?.drain();
      await started.server?.close({ processExits: true });
      logger.info('stopped');
    },
    config.cluster.enabled ? { timeoutMs: config.cluster.drain_timeout + SHUTDOWN_TIMEOUT_MS } : {},
  );
  // `svcd drain` (over NATS) stops the node the way SIGTERM does.
  const drainRequested = () => process.kill(process.pid, 'SIGTERM');
  started.server = await startServer(config, logger, { drainRequested }).catch((err: unknown) => {
    const explained = explainStartError(err, config);
    // Also in [logging] log_file; main writes the same message to stderr and exits non-zero.
    logger.error(
      { reason: explained instanceof Error ? explained.message : String(explained) },
      'start failed',
    );
    throw explained;
  });
  return started.server;
}

/** Turns a listen failure into a message naming the config key. */
function explainStartError(err: unknown, config: SvcdConfig): unknown {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e.code !== 'EADDRINUSE' && e.code !== 'EACCES' && e.code !== 'EADDRNOTAVAIL') return err;
  const where = `${e.address ?? ''}:${e.port ?? ''}`;
  const key =
    config.api.address && config.api.address.endsWith(`:${e.port}`) ? '[api] address' : '[server] address';
  const why = {
    EADDRINUSE: 'is already in use',
    EACCES: 'needs privileges (use a port above 1024)',
    EADDRNOTAVAIL: 'is not an address of this machine',
  }[e.code];
  return new Error(`${key}: cannot listen on ${where}: the address ${why}`);
}
