/** A closed range of ports. */
interface Range {
  from: number;
  to: number;
}

const RANGE = /^(\d{1,5})(?:-(\d{1,5}))?$/;

/** Parses `[server] used_ports`/`excluded_ports` entries (`20000`, `20000-30000`; validated by the config schema). */
function parseRanges(list: readonly string[]): Range[] {
  const ranges: Range[] = [];
  for (const text of list) {
    const match = RANGE.exec(text.trim());
    if (!match) throw new Error(`invalid port range ${JSON.stringify(text)}`);
    const from = Number(match[1]);
    ranges.push({ from, to: Number(match[2] ?? match[1]) });
  }
  return ranges;
}

/** Sorted, disjoint, non-adjacent ranges. */
function merge(ranges: Range[]): Range[] {
  const sorted = [...ranges].sort((a, b) => a.from - b.from);
  const out: Range[] = [];
  for (const range of sorted) {
    const last = out[out.length - 1];
    if (last && range.from <= last.to + 1) last.to = Math.max(last.to, range.to);
    else out.push({ ...range });
  }
  return out;
}

function subtract(ranges: Range[], removed: Range[]): Range[] {
  let current = ranges;
  for (const cut of removed) {
    const next: Range[] = [];
    for (const range of current) {
      if (cut.to < range.from || cut.from > range.to) {
        next.push(range);
        continue;
      }
      if (range.from < cut.from) next.push({ from: range.from, to: cut.from - 1 });
      if (range.to > cut.to) next.push({ from: cut.to + 1, to: range.to });
    }
    current = next;
  }
  return current;
}

/** The server ports tunnels may listen on: `used_ports` minus `excluded_ports`. */
export class PortPool {
  private readonly ranges: Range[];
  /** Number of pool ports before each range, for picking the n-th port. */
  private readonly offsets: number[];
  readonly size: number;

  constructor(used: readonly string[], excluded: readonly string[]) {
    this.ranges = subtract(merge(parseRanges(used)), merge(parseRanges(excluded)));
    let size = 0;
    this.offsets = this.ranges.map((range) => {
      const offset = size;
      size += range.to - range.from + 1;
      return offset;
    });
    this.size = size;
  }

  has(port: number): boolean {
    return this.ranges.some((range) => port >= range.from && port <= range.to);
  }

  /** The pool as ranges, e.g. `20000-20009,20011-30000`. */
  describe(): string {
    if (this.size === 0) return '(empty)';
    return this.ranges.map((r) => (r.from === r.to ? String(r.from) : `${r.from}-${r.to}`)).join(',');
  }

  /** Every pool port not in `taken` once, in order from a random start; `random` returns a number in [0, 1). */
  *candidates(taken: ReadonlySet<number>, random: () => number = Math.random): Generator<number> {
    const start = Math.floor(random() * this.size);
    for (let i = 0; i < this.size; i++) {
      const port = this.nth((start + i) % this.size);
      if (!taken.has(port)) yield port;
    }
  }

  private nth(n: number): number {
    let lo = 0;
    let hi = this.ranges.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.offsets[mid] ?? 0) <= n) lo = mid;
      else hi = mid - 1;
    }
    return (this.ranges[lo]?.from ?? 0) + n - (this.offsets[lo] ?? 0);
  }
}
