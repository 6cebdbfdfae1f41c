/** Environment knobs shared by the load benchmarks (idle clients, reconnect storm). */
import { envNumber } from './child-processes.js';

export function loadSettings(defaultClients: number) {
  return {
    clients: envNumber('BENCH_CLIENTS', defaultClients, 100_000),
    workers: envNumber('BENCH_WORKERS', 4, 64),
    connectConcurrency: envNumber('BENCH_CONNECT_CONCURRENCY', 32, 10_000),
    connectTimeoutS: envNumber('BENCH_CONNECT_TIMEOUT', 900, 86_400),
    /** 0: svcd's default (half the CPUs). */
    maxHandshakes: process.env['BENCH_MAX_HANDSHAKES'] ? envNumber('BENCH_MAX_HANDSHAKES', 1, 10_000) : 0,
    svcdNodeArgs: (process.env['BENCH_SVCD_NODE_ARGS'] ?? '').split(/\s+/).filter(Boolean),
    strict: process.env['BENCH_STRICT'] === '1',
    /** BENCH_AUDIT=off: svcd runs with `[audit] enabled = false` (the audit log's cost, against a run with it). */
    auditOff: process.env['BENCH_AUDIT'] === 'off',
  };
}

/**
 * A list of whole numbers from the environment, e.g. BENCH_CURVE=5000,10000,15000 (ascending stages); unset or
 * empty: `fallback`. Anything else stops the bench with a message.
 */
export function envSteps(name: string, fallback: number[] = []): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const steps = raw.split(',').map((step) => Number(step.trim()));
  if (!steps.every((n) => Number.isInteger(n) && n > 0)) {
    process.stderr.write(
      `bench: ${name} must be whole numbers above 0 separated by commas, got ${JSON.stringify(raw)}\n`,
    );
    process.exit(2);
  }
  return steps;
}
