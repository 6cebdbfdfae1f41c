import { Argument, Command, CommanderError } from 'commander';
import type { UserAction } from './cli/user-command.js';
import { SVCD_VERSION } from './version.js';

// Only commander is loaded before the command line is parsed: `--help` and `--version` answer without the server's
// modules (about a second of loading); each command imports what it runs.

// Small Buffers are normally cut from shared 8 KiB slabs; ssh2 keeps a few tiny ones per connection (identification
// strings, the GCM tag), each pinning a whole slab for as long as the agent stays connected: ~3 KiB per idle agent
// (idle-clients bench). Without the pool each small Buffer gets its own memory; the tunnel bench shows no cost.
Buffer.poolSize = 0;

/** One message on stderr (the journal under systemd) and an exit code saying whether a restart can help. */
async function fail(err: unknown): Promise<never> {
  // Commander has printed its own message (or the help / version, exit code 0).
  if (err instanceof CommanderError && err.exitCode === 0) process.exit(0);
  const { ConfigError, EXIT_USAGE, exitCodeOf } = await import('@svc/platform');
  if (err instanceof CommanderError) process.exit(EXIT_USAGE);
  const message = err instanceof ConfigError || err instanceof Error ? err.message : String(err);
  process.stderr.write(`svcd: ${message}\n`);
  process.exit(exitCodeOf(err));
}

const collect = (value: string, previous: string[]) => [...previous, value];

const program = new Command('svcd')
  .description('svc server: management API on [api] address, agent listener on [server] address')
  .version(SVCD_VERSION, '-v, --version', 'print the version and exit')
  .option('-c, --config <file>', 'TOML configuration file (see svcd.example.conf or `svcd example-config`)')
  .showHelpAfterError()
  // Command-line errors reach fail(), which exits 64 (usage) so that systemd does not restart on them.
  .exitOverride()
  // Options after a subcommand belong to it (`svcd user add -c FILE`), not to svcd itself.
  .enablePositionalOptions()
  .action(async (opts: { config?: string }) => {
    if (!opts.config)
      throw new Error('no configuration: pass -c FILE, or run `svcd quickstart` for a ready local setup');
    const { loadConfig, runServer } = await import('./cli/run.js');
    await runServer(loadConfig(opts.config));
  });

program
  .command('quickstart')
  .description(
    'create a local setup in a data folder (SQLite, admin login, client credential) if none exists, then run',
  )
  .option('--data-dir <dir>', 'folder for the config, credentials and database', './data')
  .option(
    '--api-address <host:port>',
    'where the API listens; on a later run, given explicitly, it replaces the stored one',
    '127.0.0.1:3000',
  )
  .option(
    '--address <host:port>',
    'where agents connect; on a later run, given explicitly, it replaces the stored one',
    '0.0.0.0:8080',
  )
  .action(async (opts: { dataDir: string; apiAddress: string; address: string }, command: Command) => {
    const given = (name: string) => command.getOptionValueSource(name) === 'cli';
    const { describeAddressChanges, prepareQuickstart, quickstartBanner } =
      await import('./cli/quickstart.js');
    const { loadConfig, runServer } = await import('./cli/run.js');
    const prepared = await prepareQuickstart({
      dataDir: opts.dataDir,
      apiAddress: opts.apiAddress,
      clientAddress: opts.address,
      explicit: {
        ...(given('apiAddress') ? { apiAddress: opts.apiAddress } : {}),
        ...(given('address') ? { clientAddress: opts.address } : {}),
      },
    });
    process.stdout.write(describeAddressChanges(prepared));
    const config = loadConfig(prepared.configPath);
    const server = await runServer(config);
    process.stdout.write(quickstartBanner(prepared, config, server));
  });

program
  .command('user')
  .description('add, change or delete an API user directly in the configured user file or database table')
  .addArgument(new Argument('<action>', 'what to do').choices(['add', 'change', 'delete']))
  .requiredOption('-u, --username <name>', 'the user to add, change or delete')
  .option('-p, --password', 'prompt for the password (read from standard input when it is not a terminal)')
  .option(
    '-g, --group <group>',
    'group membership; repeat for several; on change replaces all groups',
    collect,
    [],
  )
  .requiredOption('-c, --config <file>', 'svcd configuration file naming the user store')
  .action(
    async (
      action: UserAction,
      opts: { username: string; password?: boolean; group: string[]; config: string },
    ) => {
      const { loadConfig } = await import('./cli/run.js');
      const { readPassword } = await import('./cli/password-prompt.js');
      const { runUserCommand } = await import('./cli/user-command.js');
      const config = loadConfig(opts.config);
      const password = opts.password ? await readPassword(`Password for ${opts.username}: `) : undefined;
      const message = await runUserCommand(config, {
        action,
        username: opts.username,
        groups: opts.group,
        ...(password === undefined ? {} : { password }),
      });
      process.stdout.write(message + '\n');
    },
  );

program
  .command('drain')
  .description(
    "rolling upgrade: ask a cluster node (this config's by default) to move its agents to the other nodes and stop",
  )
  .requiredOption('-c, --config <file>', 'svcd configuration file with the [cluster] section')
  .option('--node <id>', 'the node to drain; default: [cluster] node_id of the config')
  .action(async (opts: { config: string; node?: string }) => {
    // Not cli/run.js, which loads the whole server.
    const { loadDrainConfig, runDrainCommand } = await import('./cli/drain-command.js');
    await runDrainCommand(loadDrainConfig(opts.config), opts.node, (line) =>
      process.stdout.write(line + '\n'),
    );
  });

program
  .command('example-config')
  .description('print an example configuration with every key, its default and what it does')
  .action(async () => {
    const { renderExampleConfig } = await import('./config/example.js');
    process.stdout.write(renderExampleConfig());
  });

program.parseAsync(process.argv).catch(fail);
