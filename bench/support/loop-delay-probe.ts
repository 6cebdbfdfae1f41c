/**
 * Event-loop delay of svcd, measured inside it: `probeNodeArgs(file)` gives the node flags that load a small module
 * (a data: URL, so svcd loads no TypeScript tooling it would not otherwise) which every `intervalMs` appends one
 * JSON line to `file` with the delay of that window in ms (p50, p99, max) and then starts a new window.
 */
import { readFileSync } from 'node:fs';

export interface LoopWindow {
  /** Date.now() at the end of the window. */
  at: number;
  p50: number;
  p99: number;
  max: number;
}

const PROBE_SOURCE = (file: string, intervalMs: number) => `
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
const ms = (ns) => Math.round(ns / 1e4) / 100;
setInterval(() => {
  const line = { at: Date.now(), p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) };
  histogram.reset();
  appendFileSync(${JSON.stringify(file)}, JSON.stringify(line) + '\\n');
}, ${intervalMs}).unref();
`;

export function probeNodeArgs(file: string, intervalMs = 5000): string[] {
  return ['--import', `data:text/javascript,${encodeURIComponent(PROBE_SOURCE(file, intervalMs))}`];
}

export function readLoopWindows(file: string): LoopWindow[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LoopWindow);
}
