/** Output shared by the load benchmarks: plain-text tables, PASS/FAIL checks and the JSON file in bench/results/. */
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');

export interface Check {
  target: string;
  value: string;
  limit: string;
  pass: boolean;
}

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export function checksTable(checks: Check[]): string {
  return table(
    ['target', 'value', 'limit', 'result'],
    checks.map((c) => [c.target, c.value, c.limit, c.pass ? 'PASS' : 'FAIL']),
  );
}

export function machine(): Record<string, unknown> {
  return {
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadavg: loadavg(),
  };
}

export const loadAverage = (): string =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

/** Writes `bench/results/<name>-<time>.json` and returns its path. */
export async function writeResult(name: string, result: unknown): Promise<string> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}

/** Progress goes to stderr so that stdout holds only the summary. */
export const progress = (line: string): void => void process.stderr.write(`bench: ${line}\n`);
