import type { CommandFilters, FilterPattern } from './exec-settings.js';

export type FilterVerdict =
  | { allowed: true }
  | {
      allowed: false;
      /** The list that decided. */
      filter: 'allow' | 'deny';
      /** Why, naming the expression(s) involved. */
      detail: string;
    };

const first = (patterns: FilterPattern[], lines: readonly string[]) =>
  patterns.find(({ regex }) => lines.some((line) => regex.test(line)));
const listed = (patterns: FilterPattern[]) =>
  patterns.length === 0 ? '(the list is empty)' : patterns.map((p) => p.text).join(', ');

/**
 * The `[remote-commands]` allow/deny decision for one command line (spec 4.7):
 * - order allow, deny: at least one allow must match, then any matching deny refuses; matching neither refuses;
 * - order deny, allow: a matching deny refuses unless an allow also matches; matching neither is permitted.
 * Expressions are unanchored unless they anchor themselves. `otherSpellings` are the same command line written
 * differently (a script's, with its interpreter's resolved path): an expression matching any spelling counts, for
 * allow and for deny alike.
 */
export function checkCommandLine(
  line: string,
  filters: CommandFilters,
  otherSpellings: readonly string[] = [],
): FilterVerdict {
  const lines = [line, ...otherSpellings];
  const allow = first(filters.allow, lines);
  const deny = first(filters.deny, lines);
  if (filters.order[0] === 'allow') {
    if (!allow)
      return { allowed: false, filter: 'allow', detail: `matches none of ${listed(filters.allow)}` };
    if (deny) return { allowed: false, filter: 'deny', detail: `matches ${deny.text}` };
    return { allowed: true };
  }
  if (deny && !allow)
    return { allowed: false, filter: 'deny', detail: `matches ${deny.text} and no allow expression` };
  return { allowed: true };
}
