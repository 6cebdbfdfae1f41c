import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { monotonicMs } from './monotonic.js';

/**
 * V8's `gc()`: without options it collects the whole heap; `{ type: 'minor' }` only the young generation (a
 * scavenge). Node 20's V8 runs a scavenge for `{ type: 'major' }` too, so a full collection passes nothing.
 */
type Collect = (options?: { type: 'minor' }) => void;

let collect: Collect | undefined;

/**
 * Runs one garbage collection now, without node having been started with --expose-gc; returns how long it
 * blocked the process, in ms.
 */
export function collectGarbage(type: 'minor' | 'major'): number {
  if (!collect) {
    // The documented way to reach V8's collector at run time: the flag, then a context created after it.
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as Collect;
  }
  const start = monotonicMs();
  if (type === 'minor') collect({ type });
  else collect();
  return monotonicMs() - start;
}
