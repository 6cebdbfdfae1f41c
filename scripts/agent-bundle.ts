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
 * Native addons are optional everywhere the agent uses them: AES-GCM stays on node's crypto without ssh2's
 * sshcrypto binding (see lazySsh2Crypto), the WebSocket masking on plain JS without bufferutil, and without
 * @svc/malloc-trim the agent keeps the free pages of its C heap after load, without @svc/native-spawn it starts its jobs
 * with node's child_process.
 */
const NATIVE_PACKAGES = /^(bufferutil|@svc\/malloc-trim|@svc\/native-spawn)$/;
/**
 * ssh2 asks cpu-features only to order its default ciphers, and the agent names its own (AGENT_CIPHERS): both
 * bundles leave it out (one addon fewer to load).
 */
const UNUSED_NATIVE_PACKAGES = /^cpu-features$/;
const SSH2_BINDING = /^\.\/crypto\/build\/Release\/sshcrypto\.node$/;
const SSH2_LAZY_CRYPTO = join(ROOT, 'packages/platform/dist/ssh2-lazy-crypto.cjs');

/** A module the agent bundle replaces with a few lines of its own (each says why the agent never needs it). */
interface StandIn {
  module: RegExp;
  contents: string;
}

const unused = (what: string) =>
  `const unused = () => { throw new Error(${JSON.stringify(`${what} is left out of the svc agent`)}); };`;

/**
 * Parts of ssh2 that an agent never runs but that load, and stay in memory, with its client module. Each stand-in
 * throws if it is ever called.
 */
const STAND_INS: StandIn[] = [
  // The poly1305 WebAssembly serves chacha20-poly1305 without ssh2's native binding, yet is instantiated as ssh2
  // loads, which keeps ~5 MB resident (V8's WebAssembly compiler, code and memory). The agent never offers that
  // cipher (AGENT_CIPHERS in packages/agent/src/connection/ciphers.ts).
  {
    module: /[\\/]ssh2[\\/]lib[\\/]protocol[\\/]crypto[\\/]poly1305\.js$/,
    contents: `${unused('ssh2 poly1305 WebAssembly')}
module.exports = async () => ({ _malloc: () => 0, cwrap: () => unused, HEAPU8: new Uint8Array(0) });`,
  },
  // SFTP (114 KB of source): the agent opens no SFTP session. ssh2 only compares channels' constructors with it.
  {
    module: /[\\/]ssh2[\\/]lib[\\/]protocol[\\/]SFTP\.js$/,
    contents: `${unused('SFTP')}
class SFTP { constructor() { unused(); } }
module.exports = { SFTP, flagsToString: unused, OPEN_MODE: {}, STATUS_CODE: {}, stringToFlags: unused };`,
  },
  // Authentication through an ssh-agent: the agent logs in with its client credential's password.
  {
    module: /[\\/]ssh2[\\/]lib[\\/]agent\.js$/,
    contents: `${unused('ssh-agent authentication')}
class AgentContext { constructor() { unused(); } }
module.exports = { AgentContext, createAgent: unused, isAgent: () => false };`,
  },
  // Decrypts passphrase-protected private keys (and brings tweetnacl): the agent holds no private key.
  {
    module: /[\\/]bcrypt-pbkdf[\\/]index\.js$/,
    contents: `${unused('bcrypt-pbkdf (encrypted private keys)')}
module.exports = { pbkdf: unused };`,
  },
];

/** Gives the bundle the STAND_INS instead of the modules they replace. */
const standIns: Plugin = {
  name: 'stand-ins',
  setup(build) {
    for (const { module, contents } of STAND_INS)
      build.onLoad({ filter: module, namespace: 'file' }, () => ({ contents, loader: 'js' }));
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

/**
 * ssh2's native binding is loaded only for a transfer: ssh2 gets the AES-GCM classes of
 * packages/platform/src/ssh2-lazy-crypto.cts instead, which load it when the agent asks (useNativeSsh2Crypto).
 */
const lazySsh2Crypto: Plugin = {
  name: 'lazy-ssh2-crypto',
  setup(build) {
    build.onResolve({ filter: SSH2_BINDING }, () => ({ path: SSH2_LAZY_CRYPTO }));
  },
};

/** Loads the native addons at run time from node_modules, as the unbundled modules would. */
const requireNativeAddons: Plugin = {
  name: 'require-native-addons',
  setup(build) {
    build.onResolve({ filter: NATIVE_PACKAGES }, (args) => ({ path: args.path, external: true }));
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
      standIns,
      lazySsh2Crypto,
      leaveOut('unused-native-addons', [UNUSED_NATIVE_PACKAGES]),
      nativeAddons === 'external'
        ? requireNativeAddons
        : leaveOut('native-addons', [NATIVE_PACKAGES, /\.node$/]),
    ],
    minifyWhitespace: true,
    minifySyntax: true,
    minifyIdentifiers: true,
    legalComments: 'linked',
    logLevel: 'warning',
  });
  if (result.errors.length > 0)
    throw new Error(`esbuild failed: ${result.errors.map((e) => e.text).join('; ')}`);
}
