import v8 from 'node:v8';
import { CommanderError } from 'commander';
import { EXIT_CONFIG, EXIT_USAGE, exitCodeOf } from '@svc/platform';
import { buildProgram } from './cli/program.js';
import { runAgent } from './cli/run.js';
import { UsageError } from './config/settings.js';

// A tunnel allocates ~1 GB/s of Buffers. V8 frees young ones on a helper thread and counts their memory as
// released only when that thread is done; on a busy machine it lags, the count passes V8's external-memory limit
// and a full GC runs every ~50 ms (7 of 10 tunnel benchmark runs: svc at 2-4 CPU s/GiB instead of 1.6). Freeing
// them during the scavenge itself keeps the count true (afterwards 5 of 6 runs had 1-2 full GCs, one had 22).
v8.setFlagsFromString('--no-concurrent-array-buffer-sweeping');
// Scavenges on the main thread only: the agent's young generation is small, and it runs one every 2 MiB a tunnel
// relays (RelayGarbage). Handing each to V8's worker threads made them cost twice as long (0.37 ms median, a
// tail to 2 ms on 2 busy cores; alone 0.23 ms, 2026-11-25), enough to slow a fast tunnel.
v8.setFlagsFromString('--no-parallel-scavenge');
// TurboFan optimises a function after ~3 × 66 KB of its bytecode ran: 100 short commands were enough to compile
// code that stayed resident (node's compiler pages, its threads' heaps: +9 MiB, against +1.4 MiB with --no-opt).
// Ten times that budget, set here at run time, halves it (+5 MiB); a tunnel's hot path still gets optimised, and
// tunnel throughput and CPU did not change beyond the noise (bench:tunnel, 3 × 512 MiB each way, 2026-11-25).
v8.setFlagsFromString('--interrupt-budget=675840');
// As in svcd: small Buffers get their own memory instead of pinning shared 8 KiB slabs.
Buffer.poolSize = 0;

const program = buildProgram((commandLine) =>
  runAgent(commandLine, { auth: process.env.SVC_AUTH, cwd: process.cwd() }),
).exitOverride();

// No top-level await: the one-file agent is bundled as CommonJS, which has none.
async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (err) {
    // Commander has printed its message; 64 (usage), like 78 (config), tells systemd a restart will not help.
    if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
    // UsageError, ConfigError and start-up failures carry a message meant for the person at the keyboard.
    process.stderr.write(`svc: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof UsageError ? EXIT_CONFIG : exitCodeOf(err));
  }
}

void main();
