import { ConfigError } from './config-loader.js';

/**
 * Exit codes of svcd and svc for a start that cannot succeed by trying again. They are the BSD sysexits values,
 * which systemd shows by name (`status=78/CONFIG`); the units list them in RestartPreventExitStatus, so a wrong
 * setting stops the service instead of restarting it forever. Every other failure exits 1 and is restarted.
 */
export const EXIT_USAGE = 64;
export const EXIT_CONFIG = 78;

/** 78 for a configuration problem (config file, certificate files, missing settings), else 1. */
export const exitCodeOf = (err: unknown): number => (err instanceof ConfigError ? EXIT_CONFIG : 1);
