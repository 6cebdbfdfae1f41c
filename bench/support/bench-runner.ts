/** The life cycle shared by the load benchmarks: cleanups run in reverse on success, failure and Ctrl-C. */
import { stopAllChildren } from './child-processes.js';
import { progress } from './report.js';

const cleanups: (() => Promise<void>)[] = [];

/** Registers something to undo at the end (stop a process, remove a folder); the last one registered runs first. */
export function onCleanUp(cleanup: () => Promise<void> | void): void {
  cleanups.push(async () => cleanup());
}

async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  await stopAllChildren();
}

/** Runs the bench: false from `main` means a target failed (exit 1 only when `strict`); a throw is exit 1. */
export async function runBench(main: () => Promise<boolean>, strict: boolean): Promise<void> {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress(`${signal}: stopping svcd and the simulators`);
      void cleanUp().finally(() => process.exit(130));
    });
  }
  try {
    if (!(await main())) {
      progress('at least one target FAILED (see the table above)');
      if (strict) process.exitCode = 1;
    }
  } catch (err) {
    process.stderr.write(
      `\nbench FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exitCode = 1;
  } finally {
    await cleanUp();
  }
}
