/** Evaluation order of the allow/deny filters, as written in `[remote-commands] order`. */
export type FilterOrder = readonly ['allow', 'deny'] | readonly ['deny', 'allow'];

/** One allow or deny entry: the expression as written in the config, and compiled. */
export interface FilterPattern {
  text: string;
  regex: RegExp;
}

export interface CommandFilters {
  allow: FilterPattern[];
  deny: FilterPattern[];
  order: FilterOrder;
}

/** `[remote-commands]`, `[remote-scripts]` and `[interpreter-aliases]` after validation. */
export interface ExecSettings {
  commandsEnabled: boolean;
  /** Scripts also need commandsEnabled. */
  scriptsEnabled: boolean;
  filters: CommandFilters;
  /** Bytes of stdout, and separately of stderr, kept and sent back per job. */
  sendBackLimit: number;
  /** alias → interpreter (a name on PATH or an absolute path). */
  interpreterAliases: Record<string, string>;
}

/** Paths under /usr/bin, /usr/local/bin and the Windows System32 folder (spec 4.7). */
export const DEFAULT_ALLOW = ['^/usr/bin/.*', '^/usr/local/bin/.*', '^C:\\\\Windows\\\\System32\\\\.*'];
/**
 * Only single commands pass. The first entry is the spec's (4.7): a pipe, redirections (and with them process
 * substitution and here-documents), semicolon, comma (brace expansion), newline or ampersand. The second refuses
 * what still runs a second command inside one: a backtick (command substitution), an opening parenthesis (`$(…)`,
 * `$((…))` whose array subscripts bash evaluates, subshells, and the substitutions of fish, zsh and PowerShell,
 * which a job may name as its interpreter) and a carriage return (a statement separator to PowerShell).
 */
export const DEFAULT_DENY = ['(\\||<|>|;|,|\\n|&)', '(`|\\(|\\r)'];
export const DEFAULT_ORDER: FilterOrder = ['allow', 'deny'];
export const DEFAULT_SEND_BACK_LIMIT = 4 * 1024 * 1024;
/** Upper bound for send_back_limit: every kept result lives in the agent's memory until svcd has stored it. */
export const MAX_SEND_BACK_LIMIT = 64 * 1024 * 1024;

/**
 * Compiles one filter entry (JavaScript syntax, no flags; unanchored unless it anchors itself). The error message
 * says what is wrong with the expression.
 */
export function compileFilter(text: string): FilterPattern {
  try {
    return { text, regex: new RegExp(text) };
  } catch (error) {
    throw new Error(`invalid regular expression ${JSON.stringify(text)}: ${(error as Error).message}`);
  }
}

export function defaultExecSettings(): ExecSettings {
  return {
    commandsEnabled: true,
    scriptsEnabled: true,
    filters: {
      allow: DEFAULT_ALLOW.map(compileFilter),
      deny: DEFAULT_DENY.map(compileFilter),
      order: DEFAULT_ORDER,
    },
    sendBackLimit: DEFAULT_SEND_BACK_LIMIT,
    interpreterAliases: {},
  };
}
