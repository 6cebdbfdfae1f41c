import { BoundedMap } from './bounded-map.js';

interface Window {
  openedAt: number;
  suppressed: number;
}

/**
 * Lets one event per key (e.g. per remote address) through each interval, so a peer that repeats a mistake is
 * logged once a minute instead of once per attempt. Remembers at most `maxKeys` keys; the longest-quiet is
 * forgotten first.
 */
export class LogThrottle {
  private readonly windows: BoundedMap<string, Window>;

  constructor(
    private readonly intervalMs: number,
    maxKeys: number,
    private readonly now: () => number = Date.now,
  ) {
    this.windows = new BoundedMap(maxKeys);
  }

  /** The number of events of this key held back since the last one let through, or undefined to hold this one back. */
  admit(key: string): number | undefined {
    const now = this.now();
    const window = this.windows.get(key);
    if (window && now - window.openedAt < this.intervalMs) {
      window.suppressed += 1;
      return undefined;
    }
    // Re-inserting moves the key to the newest end, so a full map forgets the keys quiet the longest.
    this.windows.delete(key);
    this.windows.set(key, { openedAt: now, suppressed: 0 });
    return window?.suppressed ?? 0;
  }
}
