import { Command, Option } from 'commander';
import { EXAMPLE_CONFIG, LOG_LEVELS } from '../config/schema.js';
import type { CliFlags } from '../config/settings.js';
import { SVC_VERSION } from '../version.js';

export interface CommandLine {
  serverArg: string | undefined;
  flags: CliFlags;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

const MORE_HELP = `
Settings come from the flags, then the config file (-c), then defaults. Credentials are taken from
--auth, else [client] auth in the config file, else the SVC_AUTH environment variable.

svcd may run commands and scripts on this machine, as the account svc runs under. By default only single
commands under /usr/bin and /usr/local/bin are allowed; see [remote-commands] and [remote-scripts] in the
config file to change or switch that off.

Examples:
  svc --auth client1:secret http://svcd.example.com:8080
  svc --auth client1:secret --fingerprint 5d:b3:ee:37 --tag web --label env:prod svcd.example.com:8080
  svc --auth client1:secret --fingerprint 5d:b3:ee:37 --tls-ca /etc/svc/ca.pem https://svcd.example.com:8080
  SVC_AUTH=client1:secret svc -c /etc/svc/svc.conf

See ${EXAMPLE_CONFIG} for every config-file key.`;

/** The `svc` command line; `action` runs with the parsed arguments. */
export function buildProgram(action: (commandLine: CommandLine) => Promise<void>): Command {
  return new Command('svc')
    .description('svc agent: keeps one connection to svcd so this machine can be managed remotely')
    .version(SVC_VERSION, '-v, --version', 'print the version and exit')
    .argument(
      '[server-url]',
      'svcd agent address ([server] address): http://host:port, https://host:port or host:port',
    )
    .option(
      '-c, --config <file>',
      'TOML config file with [client], [connection], [logging], [remote-commands], [remote-scripts] and ' +
        `[interpreter-aliases] (see ${EXAMPLE_CONFIG})`,
    )
    .option(
      '--auth <id:password>',
      'client credentials: client-auth-id and password, split at the first colon',
    )
    .option('--id <id>', 'client id shown in svcd (default: generated once and kept in the data folder)')
    .option('--name <name>', 'display name (default: the host name)')
    .option(
      '-t, --tag <tag>',
      'tag for this client; repeat for several (replaces the config file tags)',
      collect,
    )
    .option(
      '-l, --label <key:value>',
      'label for this client; repeat for several (replaces the config file labels)',
      collect,
    )
    .option(
      '--fingerprint <md5>',
      "svcd's host key fingerprint (MD5 colon hex, as GET /status shows it) or its start; " +
        'connections to any other key are refused. Without it any key is accepted and a warning is logged',
    )
    .option(
      '--tls-ca <file>',
      "PEM file of the CA(s) that signed svcd's TLS certificate, trusted instead of the system's CAs " +
        '(for https:// server addresses; the --fingerprint check still applies)',
    )
    .option(
      '--data-dir <dir>',
      'folder for the generated client id and for scripts while they run (default: ./svc-data)',
    )
    .addOption(
      new Option('--log-level <level>', 'least severe level logged (default: info)').choices(LOG_LEVELS),
    )
    .addHelpText('after', MORE_HELP)
    .showHelpAfterError()
    .action(async (serverArg: string | undefined, flags: CliFlags) => action({ serverArg, flags }));
}
