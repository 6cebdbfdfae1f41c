import { dirname, resolve } from 'node:path';
import type { SvcdConfig } from '../config/schema.js';

/** Relative paths in a config file are taken from the file's own folder, wherever svcd is started from. */
export function resolveConfigPaths(config: SvcdConfig, configPath: string): SvcdConfig {
  const base = dirname(resolve(configPath));
  const abs = (p: string | undefined) => (p ? resolve(base, p) : p);
  const dataDir = resolve(base, config.server.data_dir);
  return {
    ...config,
    server: {
      ...config.server,
      data_dir: dataDir,
      auth_file: abs(config.server.auth_file),
      tls_cert: abs(config.server.tls_cert),
      tls_key: abs(config.server.tls_key),
    },
    api: {
      ...config.api,
      auth_file: abs(config.api.auth_file),
      cert_file: abs(config.api.cert_file),
      key_file: abs(config.api.key_file),
      doc_root: abs(config.api.doc_root),
    },
    database:
      config.database.db_type === 'sqlite'
        ? { ...config.database, db_name: resolve(dataDir, config.database.db_name || 'svcd.db') }
        : config.database,
    logging: { ...config.logging, log_file: abs(config.logging.log_file) ?? '' },
  };
}
