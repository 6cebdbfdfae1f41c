import vm from 'node:vm';

/**
 * The regular expressions of `commands_restricted`. V8's backtracking engine is exponential on nested repetition
 * (`(a+)+`) and on repeated alternation (`(a|a)*`), and polynomial in the number of repetitions, so a pattern is
 * refused when it is saved if
 * - a repeated group holds a repetition or an alternation,
 * - it has more than MAX_REPETITIONS repetitions (`*`, `+`, `{n,}`, `{n,m}` with m > 1),
 * - it uses a back-reference (`\1`, `\k<name>`).
 * And matching itself runs under a time budget (`firstMatch`): a check that overruns refuses the command.
 */
export const MAX_REPETITIONS = 3;

export interface CompiledPattern {
  source: string;
  regex: RegExp;
}

interface Frame {
  repeats: boolean;
  alternates: boolean;
}

/** Returns why the pattern is refused, or undefined when its shape is bounded. */
function shapeProblem(source: string): string | undefined {
  const stack: Frame[] = [{ repeats: false, alternates: false }];
  let repetitions = 0;
  // The atom just read: a group (its frame) or a plain atom; null when no atom precedes (start, `|`, `(`).
  let atom: Frame | 'plain' | null = null;
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    if (c === '\\') {
      const next = source[i + 1] ?? '';
      if (/[1-9]/.test(next) || (next === 'k' && source[i + 2] === '<'))
        return 'back-references are not accepted';
      atom = 'plain';
      i += 2;
      continue;
    }
    if (c === '[') {
      i += 1;
      if (source[i] === '^') i += 1;
      if (source[i] === ']') i += 1;
      while (i < source.length && source[i] !== ']') i += source[i] === '\\' ? 2 : 1;
      atom = 'plain';
      i += 1;
      continue;
    }
    if (c === '(') {
      stack.push({ repeats: false, alternates: false });
      atom = null;
      i += 1;
      if (source[i] === '?') {
        // (?:  (?=  (?!  (?<=  (?<!  (?<name>
        i += 1;
        if (source[i] === '<' && source[i + 1] !== '=' && source[i + 1] !== '!') {
          while (i < source.length && source[i] !== '>') i += 1;
        } else if (source[i] === '<') i += 1;
        i += 1;
      }
      continue;
    }
    if (c === ')') {
      const frame = stack.length > 1 ? stack.pop() : undefined;
      if (frame) {
        const outer = stack[stack.length - 1] as Frame;
        outer.repeats ||= frame.repeats;
        atom = frame;
      } else atom = 'plain';
      i += 1;
      continue;
    }
    if (c === '|') {
      (stack[stack.length - 1] as Frame).alternates = true;
      atom = null;
      i += 1;
      continue;
    }
    const quantifier = readQuantifier(source, i);
    if (quantifier && atom !== null) {
      if (quantifier.repeats) {
        repetitions += 1;
        if (atom !== 'plain' && (atom.repeats || atom.alternates))
          return 'a repeated group may not hold a repetition or an alternation (use a character class)';
        (stack[stack.length - 1] as Frame).repeats = true;
      }
      i = quantifier.end;
      if (source[i] === '?') i += 1; // lazy
      atom = null;
      continue;
    }
    atom = 'plain';
    i += 1;
  }
  if (repetitions > MAX_REPETITIONS) return `at most ${MAX_REPETITIONS} repetitions (*, +, {n,}) per pattern`;
  return undefined;
}

function readQuantifier(source: string, at: number): { repeats: boolean; end: number } | undefined {
  const c = source[at];
  if (c === '*' || c === '+') return { repeats: true, end: at + 1 };
  if (c === '?') return { repeats: false, end: at + 1 };
  if (c !== '{') return undefined;
  const match = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(at, at + 24));
  if (!match) return undefined;
  const max = match[2] === undefined ? Number(match[1]) : match[3] === '' ? Infinity : Number(match[3]);
  return { repeats: max > 1, end: at + match[0].length };
}

/** Compiles one pattern; throws an Error saying what is wrong with it. */
export function compileRestrictionPattern(source: string): CompiledPattern {
  let regex: RegExp;
  try {
    regex = new RegExp(source);
  } catch (err) {
    throw new Error(`${JSON.stringify(source)} is not a valid regular expression: ${(err as Error).message}`);
  }
  const problem = shapeProblem(source);
  if (problem) throw new Error(`${JSON.stringify(source)}: ${problem}`);
  return { source, regex };
}

/** Matching time one check may take; past it the command or script is refused as not checkable. */
export const MATCH_BUDGET_MS = 250;

export class MatchTimeout extends Error {}

// A context of its own only so that the match runs under vm's timeout, which interrupts a regular expression.
const context = vm.createContext({ patterns: [] as RegExp[], texts: [] as string[], found: null });
const scan = new vm.Script(
  'found = null;' +
    'outer: for (let t = 0; t < texts.length; t++)' +
    '  for (let p = 0; p < patterns.length; p++)' +
    '    if (patterns[p].test(texts[t])) { found = [t, p]; break outer; }',
);

/**
 * The first (text, pattern) pair that matches, as indexes; undefined when none does. Throws MatchTimeout when
 * the whole scan takes longer than MATCH_BUDGET_MS.
 */
export function firstMatch(
  patterns: readonly CompiledPattern[],
  texts: readonly string[],
): [number, number] | undefined {
  if (patterns.length === 0 || texts.length === 0) return undefined;
  context.patterns = patterns.map((p) => p.regex);
  context.texts = texts;
  try {
    scan.runInContext(context, { timeout: MATCH_BUDGET_MS });
    return (context.found as [number, number] | null) ?? undefined;
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw new MatchTimeout();
    throw err;
  } finally {
    context.patterns = [];
    context.texts = [];
    context.found = null;
  }
}
