/** A value to hide from a job's output, and the name it is replaced by: `[redacted:<label>]`. */
export interface SecretValue {
  value: string;
  label: string;
}

interface Needle {
  value: Buffer;
  replacement: Buffer;
}

export const redactionText = (label: string): string => `[redacted:${label}]`;

/**
 * The needles of one list of secrets, longest first. Kept while the list lives: the children of one run share one
 * list, so a run on 1,000 clients prepares its needles once instead of for every output.
 */
const needlesOf = new WeakMap<readonly SecretValue[], Needle[]>();

function prepare(secrets: readonly SecretValue[]): readonly Needle[] {
  let needles = needlesOf.get(secrets);
  if (!needles) {
    needles = secrets
      .filter((s) => s.value !== '')
      .map((s) => ({ value: Buffer.from(s.value, 'utf8'), replacement: Buffer.from(redactionText(s.label)) }))
      .sort((a, b) => b.value.length - a.value.length);
    needlesOf.set(secrets, needles);
  }
  return needles;
}

/**
 * Replaces every occurrence of each secret value in a byte stream that arrives in chunks. A chunk's end that could
 * be the start of a secret is held back until the next chunk (or `end`) shows whether it is, so a value split
 * across chunks is still caught; everything else passes at once. At one position the longest value wins.
 */
export class StreamRedactor {
  private readonly needles: readonly Needle[];
  private readonly longest: number;
  private pending: Buffer = Buffer.alloc(0);

  constructor(secrets: readonly SecretValue[]) {
    this.needles = prepare(secrets);
    this.longest = this.needles[0]?.value.length ?? 0;
  }

  /** Whether there is anything to redact at all. */
  get active(): boolean {
    return this.needles.length > 0;
  }

  /** The part of the stream that is safe to pass on now (possibly empty). */
  push(chunk: Buffer): Buffer {
    if (!this.active) return chunk;
    const data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const { out, held } = this.scan(data, true);
    this.pending = held;
    return out;
  }

  /** What was held back, redacted; the stream is over. */
  end(): Buffer {
    if (!this.active || this.pending.length === 0) return Buffer.alloc(0);
    const { out } = this.scan(this.pending, false);
    this.pending = Buffer.alloc(0);
    return out;
  }

  private scan(data: Buffer, holdTail: boolean): { out: Buffer; held: Buffer } {
    const parts: Buffer[] = [];
    let pos = 0;
    for (;;) {
      const hold = holdTail ? this.holdStart(data, pos) : data.length;
      const match = this.firstMatch(data, pos, hold);
      if (!match) {
        parts.push(data.subarray(pos, hold));
        return { out: concat(parts), held: Buffer.from(data.subarray(hold)) };
      }
      parts.push(data.subarray(pos, match.at), match.needle.replacement);
      pos = match.at + match.needle.value.length;
    }
  }

  /** The leftmost occurrence starting before `before` (the longest value at that position). */
  private firstMatch(data: Buffer, from: number, before: number): { at: number; needle: Needle } | undefined {
    let best: { at: number; needle: Needle } | undefined;
    for (const needle of this.needles) {
      const at = data.indexOf(needle.value, from);
      if (at === -1 || at >= before) continue;
      // Needles are sorted longest first, so an equal position keeps the longer one.
      if (!best || at < best.at) best = { at, needle };
    }
    return best;
  }

  /** The first index at or after `from` where the rest of `data` is an unfinished start of some value. */
  private holdStart(data: Buffer, from: number): number {
    for (let at = Math.max(from, data.length - this.longest + 1); at < data.length; at += 1) {
      const rest = data.length - at;
      for (const needle of this.needles) {
        if (
          needle.value.length > rest &&
          needle.value[0] === data[at] &&
          data.compare(needle.value, 0, rest, at) === 0
        )
          return at;
      }
    }
    return data.length;
  }
}

const concat = (parts: Buffer[]): Buffer =>
  parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);

/** Every occurrence of each value in a whole text replaced. */
export function redactText(text: string, secrets: readonly SecretValue[]): string {
  const redactor = new StreamRedactor(secrets);
  if (!redactor.active) return text;
  return Buffer.concat([redactor.push(Buffer.from(text, 'utf8')), redactor.end()]).toString('utf8');
}
