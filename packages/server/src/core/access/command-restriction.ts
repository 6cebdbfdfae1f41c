import { AppError, ERROR_CODES, type CommandsRestricted } from '@svc/protocol';
import {
  compileRestrictionPattern,
  firstMatch,
  MatchTimeout,
  MATCH_BUDGET_MS,
  type CompiledPattern,
} from './restriction-pattern.js';

/** Longest script line deny rules are checked on; a longer line makes the script refused (bounded checking). */
export const MAX_CHECKED_LINE = 4096;

/** firstMatch, a timeout refusing the command rather than letting it through unchecked. */
function matchOf(
  patterns: readonly CompiledPattern[],
  texts: readonly string[],
): [number, number] | undefined {
  try {
    return firstMatch(patterns, texts);
  } catch (err) {
    if (!(err instanceof MatchTimeout)) throw err;
    throw refused(
      'Command refused: checking it against the restrictions of your user groups took too long',
      `the patterns of commands_restricted may take at most ${MATCH_BUDGET_MS} ms per check`,
    );
  }
}

interface GroupCommandRule {
  group: string;
  /** undefined: the group allows any command. */
  allow: CompiledPattern[] | undefined;
  deny: CompiledPattern[];
}

const refused = (title: string, detail: string) =>
  new AppError('forbidden', ERROR_CODES.commandRestricted, title, detail);

/** Compiled patterns by source: policies are read per request, patterns compiled once. */
const compiled = new Map<string, CompiledPattern>();
const MAX_COMPILED = 4096;

function compile(source: string): CompiledPattern {
  let pattern = compiled.get(source);
  if (!pattern) {
    pattern = compileRestrictionPattern(source);
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(source, pattern);
  }
  return pattern;
}

/** Compiles one group's `commands_restricted`; throws an Error naming the bad pattern. */
export function compileCommandRule(group: string, restricted: CommandsRestricted): GroupCommandRule {
  return {
    group,
    allow: restricted.allow?.map(compile),
    deny: (restricted.deny ?? []).map(compile),
  };
}

/**
 * The commands a user may run (issue 28 §3), from the `commands_restricted` of each of their user groups: a
 * command must be allowed by one group (a group without an `allow` list allows every command) and match no
 * group's `deny` pattern — deny wins.
 */
export class CommandRestriction {
  static readonly NONE = new CommandRestriction([]);

  constructor(private readonly rules: readonly GroupCommandRule[]) {}

  /** Whether any allow list limits the user. */
  get restrictsAllowed(): boolean {
    return this.rules.length > 0 && this.rules.every((rule) => rule.allow !== undefined);
  }

  /** 403 ERR_COMMAND_RESTRICTED naming the deny rule matched, or the groups whose allow lists missed. */
  assertCommand(command: string): void {
    this.assertNotDenied([command], 'command');
    if (!this.restrictsAllowed) return;
    for (const rule of this.rules) if (rule.allow && matchOf(rule.allow, [command])) return;
    throw refused(
      'Command refused: it matches no allow rule of your user groups',
      `groups ${this.rules.map((r) => `'${r.group}'`).join(', ')} (commands_restricted.allow); nothing was sent`,
    );
  }

  /**
   * Scripts: a script is code an allow list cannot vouch for, so with every group's commands limited by an allow
   * list scripts are refused; otherwise each line of the script is checked against the deny rules.
   */
  assertScript(text: string): void {
    if (this.restrictsAllowed)
      throw refused(
        'Script refused: your user groups may run only the commands their allow rules list',
        `groups ${this.rules.map((r) => `'${r.group}'`).join(', ')} (commands_restricted.allow); run the commands ` +
          'one by one instead',
      );
    if (!this.rules.some((rule) => rule.deny.length > 0)) return;
    const lines = text.split(/\r?\n/);
    if (lines.some((line) => line.length > MAX_CHECKED_LINE))
      throw refused(
        'Script refused: a line is too long to check against the deny rules',
        `lines of at most ${MAX_CHECKED_LINE} characters are checked (commands_restricted.deny)`,
      );
    this.assertNotDenied(lines, 'script line');
  }

  private assertNotDenied(texts: readonly string[], what: string): void {
    for (const rule of this.rules) {
      const hit = matchOf(rule.deny, texts);
      if (hit)
        throw refused(
          `Command refused by user group '${rule.group}': the ${what} matches deny rule ` +
            JSON.stringify(rule.deny[hit[1]]?.source),
          'commands_restricted.deny wins over any allow rule; nothing was sent',
        );
    }
  }
}
