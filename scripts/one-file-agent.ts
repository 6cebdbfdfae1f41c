/**
 * The one-file svc agent: packages/agent bundled by esbuild into one CommonJS script, then embedded into a copy of
 * the running node binary as a single executable application (node's SEA, injected with postject). The result runs
 * with no node installed and no node_modules. Everything comes from npm and the running node: nothing is downloaded.
 */
import { execFile } from 'node:child_process';
import { chmod, copyFile, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'postject';
import { ROOT, bundleAgent } from './agent-bundle.js';

export { ROOT };
export const OUT_DIR = join(ROOT, 'dist-agent');
/** The agent as one CommonJS script, runnable with `node dist-agent/svc.cjs`. */
export const BUNDLE = join(OUT_DIR, 'svc.cjs');
/** The single executable. */
export const ONE_FILE_AGENT = join(OUT_DIR, 'svc');

/** node's SEA fuse; postject flips it so the binary runs the embedded script instead of node's own CLI. */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const run = promisify(execFile);

/** Embeds BUNDLE into a copy of the running node binary at ONE_FILE_AGENT (linux; see README for others). */
export async function buildSingleExecutable(): Promise<void> {
  const seaConfig = join(OUT_DIR, 'sea-config.json');
  const blob = join(OUT_DIR, 'sea-prep.blob');
  await writeFile(
    seaConfig,
    JSON.stringify({ main: BUNDLE, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false }),
  );
  await run(process.execPath, ['--experimental-sea-config', seaConfig], { cwd: OUT_DIR });
  await rm(ONE_FILE_AGENT, { force: true });
  await copyFile(process.execPath, ONE_FILE_AGENT);
  await chmod(ONE_FILE_AGENT, 0o755);
  const seaBlob = await readFile(blob);
  await withoutLiefNoteWarnings(() =>
    inject(ONE_FILE_AGENT, 'NODE_SEA_BLOB', seaBlob, { sentinelFuse: SEA_FUSE }),
  );
  await rm(blob);
  await rm(seaConfig);
}

/**
 * postject's ELF editor (LIEF, compiled to WebAssembly) warns nine times per build that it cannot name node's
 * `.note` sections; the sections are copied unchanged and the binary runs, so the lines say nothing to act on.
 * Its module writes them through `console.warn` as bound when `inject` loads it: the stand-in drops only them.
 */
async function withoutLiefNoteWarnings<T>(work: () => Promise<T>): Promise<T> {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && LIEF_NOTE_WARNING.test(args[0])) return;
    warn(...args);
  };
  try {
    return await work();
  } finally {
    console.warn = warn;
  }
}

const LIEF_NOTE_WARNING = /^warning: Can't find string offset for section name '\.note[^']*'$/;

export async function buildOneFileAgent(): Promise<void> {
  // A single executable can load no native addon: the bundle leaves them out.
  await bundleAgent({ outfile: BUNDLE, nativeAddons: 'left-out' });
  await buildSingleExecutable();
}
