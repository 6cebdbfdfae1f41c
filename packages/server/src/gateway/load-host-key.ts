import { loadOrCreateSecret, randomSecret } from '../infra/data-dir.js';
import { deriveHostKey, type HostKey } from './host-key.js';

/** The host key comes from `[server] key_seed`, else from a seed generated once and kept in data_dir. */
export async function loadHostKey(keySeed: string, dataDir: string): Promise<HostKey> {
  const seed = keySeed || (await loadOrCreateSecret(dataDir, 'host-key-seed', randomSecret));
  return deriveHostKey(seed);
}
