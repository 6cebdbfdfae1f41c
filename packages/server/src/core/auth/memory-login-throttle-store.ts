import type { ExpiringRecords, LoginThrottleStore } from './login-throttle-store.js';

/** Expired records are swept every this many writes, so a scan of many addresses or names stays bounded. */
const SWEEP_EVERY = 1024;

class MemoryRecords<T> implements ExpiringRecords<T> {
  private readonly records = new Map<string, { value: T; expiresAt: number }>();
  private writes = 0;

  get(key: string, now: number): Promise<T | undefined> {
    const record = this.records.get(key);
    return Promise.resolve(record && record.expiresAt > now ? record.value : undefined);
  }

  set(key: string, value: T, expiresAt: number, now: number): Promise<void> {
    this.writes += 1;
    if (this.writes % SWEEP_EVERY === 0) this.sweep(now);
    this.records.set(key, { value, expiresAt });
    return Promise.resolve();
  }

  delete(key: string): Promise<void> {
    this.records.delete(key);
    return Promise.resolve();
  }

  private sweep(now: number): void {
    for (const [key, record] of this.records) if (record.expiresAt <= now) this.records.delete(key);
  }
}

/** The login throttle's state in this process: a restart forgets it. */
export function memoryLoginThrottleStore(): LoginThrottleStore {
  return {
    addresses: new MemoryRecords(),
    userAtAddress: new MemoryRecords(),
    users: new MemoryRecords(),
  };
}
