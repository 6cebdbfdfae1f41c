/**
 * The svc agent as one CommonJS script, bundled by esbuild from the built agent (run `tsc -b` first). One file
 * instead of hundreds of modules keeps an idle agent smaller (issue 18): `svc` (packages/agent/bin/svc.js) runs
 * AGENT_BUNDLE, and the one-file agent embeds its own variant.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const AGENT_ENTRY = join(ROOT, 'packages/agent/dist/main.js');
/** The bundle `svc` runs, next to the tsc output so the package's files carry it. */
export const AGENT_BUNDLE = join(ROOT, 'packages/agent/dist/svc.cjs');

/**
 * Native addons are optional everywhere the agent uses them: ssh2 falls back to node's crypto without its
 * sshcrypto binding, the WebSocket masking to plain JS without bufferutil.
 */
const NATIVE_PACKAGES = /^bufferutil$/;
/**
 * ssh2 asks cpu-features only to order its default ciphers, and the agent names its own (AGENT_CIPHERS): both
 * bundles leave it out (one addon fewer to load).
 */
const UNUSED_NATIVE_PACKAGES = /^cpu-features$/;
const SSH2_BINDING = /^\.\/crypto\/build\/Release\/sshcrypto\.node$/;
const SSH2_BINDING_PATH = 'ssh2/lib/protocol/crypto/build/Release/sshcrypto.node';
const SSH2_POLY1305 = /[\\/]ssh2[\\/]lib[\\/]protocol[\\/]crypto[\\/]poly1305\.js$/;

/**
 * ssh2 needs its poly1305 WebAssembly only for chacha20-poly1305 without its native binding, yet instantiates it
 * as it loads, which keeps ~5 MB resident (V8's WebAssembly compiler, code and memory). The agent never offers
 * that cipher (AGENT_CIPHERS in packages/agent/src/connection/ciphers.ts), so both bundles hand ssh2 a stand-in
 * that throws if ever called.
 */
const POLY1305_STAND_IN = `
const unused = () => {
  throw new Error('ssh2 poly1305 WebAssembly left out: the agent does not offer chacha20-poly1305');
};
module.exports = async () => ({ _malloc: () => 0, cwrap: () => unused, HEAPU8: new Uint8Array(0) });
`;

/** Gives ssh2 the poly1305 stand-in. */
const standInPoly1305: Plugin = {
  name: 'stand-in-poly1305',
  setup(build) {
    build.onLoad({ filter: SSH2_POLY1305, namespace: 'file' }, () => ({
      contents: POLY1305_STAND_IN,
      loader: 'js',
    }));
  },
};

/** Makes the modules matching `filters` throw on load, as a missing package would. */
function leaveOut(name: string, filters: RegExp[]): Plugin {
  return {
    name,
    setup(build) {
      for (const filter of filters)
        build.onResolve({ filter }, (args) => ({ path: args.path, namespace: name }));
      build.onLoad({ filter: /.*/, namespace: name }, (args) => ({
        contents: `throw new Error(${JSON.stringify(`${args.path} is left out of the agent bundle`)});`,
      }));
    },
  };
}

/** Loads the native addons at run time from node_modules, as the unbundled modules would. */
const requireNativeAddons: Plugin = {
  name: 'require-native-addons',
  setup(build) {
    build.onResolve({ filter: NATIVE_PACKAGES }, (args) => ({ path: args.path, external: true }));
    // ssh2 requires its binding by a relative path; from the bundle it is found as a path in the ssh2 package.
    build.onResolve({ filter: SSH2_BINDING }, () => ({ path: SSH2_BINDING_PATH, external: true }));
    build.onResolve({ filter: /^ssh2\/.*\.node$/ }, (args) => ({ path: args.path, external: true }));
  },
};

export interface BundleOptions {
  outfile: string;
  /** 'external': required from node_modules at run time; 'left-out': not there (a single executable loads none). */
  nativeAddons: 'external' | 'left-out';
}

export async function bundleAgent({ outfile, nativeAddons }: BundleOptions): Promise<void> {
  await mkdir(dirname(outfile), { recursive: true });
  const result = await build({
    entryPoints: [AGENT_ENTRY],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    plugins: [
      standInPoly1305,
      leaveOut('unused-native-addons', [UNUSED_NATIVE_PACKAGES]),
      nativeAddons === 'external'
        ? requireNativeAddons
        : leaveOut('native-addons', [NATIVE_PACKAGES, /\.node$/]),
    ],
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'linked',
    logLevel: 'warning',
  });
  if (result.errors.length > 0)
    throw new Error(`esbuild failed: ${result.errors.map((e) => e.text).join('; ')}`);
}
