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
  };
}
