import { CommanderError } from 'commander';
import { buildProgram } from './cli/program.js';
import { runAgent } from './cli/run.js';

const program = buildProgram((commandLine) =>
  runAgent(commandLine, { auth: process.env.SVC_AUTH, cwd: process.cwd() }),
);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  // UsageError, ConfigError and start-up failures carry a message meant for the person at the keyboard.
  process.stderr.write(`svc: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
