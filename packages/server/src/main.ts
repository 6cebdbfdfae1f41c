import { Argument, Command, CommanderError } from 'commander';
import { ConfigError, EXIT_USAGE, exitCodeOf } from '@svc/platform';
import { renderExampleConfig } from './config/example.js';
import { describeAddressChanges, prepareQuickstart, quickstartBanner } from './cli/quickstart.js';
import { readPassword } from './cli/password-prompt.js';
import { loadConfig, runServer } from './cli/run.js';
import { runUserCommand, type UserAction } from './cli/user-command.js';
import { SVCD_VERSION } from './version.js';

// Small Buffers are normally cut from shared 8 KiB slabs; ssh2 keeps a few tiny ones per connection (identification
// strings, the GCM tag), each pinning a whole slab for as long as the agent stays connected: ~3 KiB per idle agent
// (idle-clients bench). Without the pool each small Buffer gets its own memory; the tunnel bench shows no cost.
Buffer.poolSize = 0;

/** One message on stderr (the journal under systemd) and an exit code saying whether a restart can help. */
function fail(err: unknown): never {
  // Commander has printed its own message (or the help / version, exit code 0).
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
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
      fail('no configuration: pass -c FILE, or run `svcd quickstart` for a ready local setup');
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
  .command('example-config')
  .description('print an example configuration with every key, its default and what it does')
  .action(() => {
    process.stdout.write(renderExampleConfig());
  });

program.parseAsync(process.argv).catch(fail);
