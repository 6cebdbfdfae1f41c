/**
 * The one-file svc agent: packages/agent bundled by esbuild into one CommonJS script, then embedded into a copy of
 * the running node binary as a single executable application (node's SEA, injected with postject). The result runs
 * with no node installed and no node_modules. Everything comes from npm and the running node: nothing is downloaded.
 */
import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build, type Plugin } from 'esbuild';
import { inject } from 'postject';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const OUT_DIR = join(ROOT, 'dist-agent');
/** The agent as one CommonJS script, runnable with `node dist-agent/svc.cjs`. */
export const BUNDLE = join(OUT_DIR, 'svc.cjs');
/** The single executable. */
export const ONE_FILE_AGENT = join(OUT_DIR, 'svc');

/** node's SEA fuse; postject flips it so the binary runs the embedded script instead of node's own CLI. */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const AGENT_ENTRY = join(ROOT, 'packages/agent/dist/main.js');

/**
 * Native addons are optional everywhere the agent uses them, and a SEA can load none: ssh2 falls back to node's
 * crypto without cpu-features and its sshcrypto binding, ws to plain JS without bufferutil/utf-8-validate.
 */
const OPTIONAL_NATIVE = /^(cpu-features|bufferutil|utf-8-validate)$|\.node$/;

/** Resolves the optional native addons to a module that throws on load, as a missing package would. */
const leaveOutNativeAddons: Plugin = {
  name: 'leave-out-native-addons',
  setup(build) {
    build.onResolve({ filter: OPTIONAL_NATIVE }, (args) => ({ path: args.path, namespace: 'left-out' }));
    build.onLoad({ filter: /.*/, namespace: 'left-out' }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`${args.path} is left out of the one-file agent`)});`,
    }));
  },
};

/** Bundles the built agent (run `tsc -b` first) into BUNDLE. */
export async function bundleAgent(): Promise<void> {
  await mkdir(OUT_DIR, { recursive: true });
  const result = await build({
    entryPoints: [AGENT_ENTRY],
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    plugins: [leaveOutNativeAddons],
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'linked',
    logLevel: 'warning',
  });
  if (result.errors.length > 0)
    throw new Error(`esbuild failed: ${result.errors.map((e) => e.text).join('; ')}`);
}

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
  await inject(ONE_FILE_AGENT, 'NODE_SEA_BLOB', await readFile(blob), { sentinelFuse: SEA_FUSE });
  await rm(blob);
  await rm(seaConfig);
}

export async function buildOneFileAgent(): Promise<void> {
  await bundleAgent();
  await buildSingleExecutable();
}
