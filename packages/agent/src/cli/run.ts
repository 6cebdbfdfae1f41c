import { hostname } from 'node:os';
import { createLineLogger, onShutdown, readPemFile } from '@svc/platform';
import { loadOrCreateClientId } from '../config/client-id.js';
import { loadAgentConfig } from '../config/schema.js';
import { resolveSettings, type AgentSettings } from '../config/settings.js';
import { Agent } from '../connection/agent.js';
import type { CommandLine } from './program.js';

export interface Environment {
  /** SVC_AUTH, read by main. */
  auth?: string | undefined;
  cwd: string;
}

/** Reads the config file (if any) and merges it with the command line and environment. */
export function settingsFrom(commandLine: CommandLine, env: Environment): AgentSettings {
  const { serverArg, flags } = commandLine;
  const file = flags.config ? { config: loadAgentConfig(flags.config), path: flags.config } : undefined;
  return resolveSettings({ serverArg, flags, file, envAuth: env.auth, cwd: env.cwd, hostname: hostname() });
}

/** Runs the agent until SIGTERM/SIGINT, which close the link and exit 0. */
export async function runAgent(commandLine: CommandLine, env: Environment): Promise<void> {
  const settings = settingsFrom(commandLine, env);
  const { tlsCaFile } = settings;
  // A missing or unreadable CA file stops the start (exit 78) before anything connects.
  const tlsCa = tlsCaFile && {
    ...tlsCaFile,
    pem: await readPemFile(tlsCaFile.path, tlsCaFile.setting, 'certificate'),
  };
  const logger = createLineLogger({ name: 'svc', level: settings.logLevel, file: settings.logFile });
  if (process.getuid?.() === 0) logger.warn('svc is running as root; an unprivileged user is enough');
  const clientId = settings.clientId ?? (await loadOrCreateClientId(settings.dataDir));
  logger.info(
    {
      server: settings.serverUrl,
      client_id: clientId,
      name: settings.name,
      credentials_from: settings.credentialsSource,
      auth_id: settings.credentials.id,
      tls_ca: tlsCaFile?.path ?? (settings.serverUrl.startsWith('wss:') ? 'system' : undefined),
      remote_commands: settings.exec.commandsEnabled,
      remote_scripts: settings.exec.commandsEnabled && settings.exec.scriptsEnabled,
    },
    'svc starting',
  );
  const agent = new Agent({ ...settings, clientId, tlsCa }, { logger });
  onShutdown(
    async () => {
      await agent.stop();
      logger.info('stopped');
    },
    { logger },
  );
  await agent.run();
}
