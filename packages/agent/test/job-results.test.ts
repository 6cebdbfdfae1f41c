import { afterEach, describe, expect, test, vi } from 'vitest';
import { JobOutput, type JobOutcome } from '../src/exec/job-output.js';
import { setLongTimeout } from '../src/exec/long-timeout.js';
import { ResultStore } from '../src/exec/result-store.js';

const DONE: JobOutcome = {
  status: 'successful',
  exit_code: 0,
  finished_at: '2026-11-25T15:04:05.123Z',
  error: '',
};
const jid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe('JobOutput', () => {
  test('keeps chunks in arrival order, each stream up to the limit, and flags the streams that lost bytes', () => {
    const output = new JobOutput(jid(1), 5);
    output.append('stdout', Buffer.from('abc'));
    output.append('stderr', Buffer.from('E'));
    output.append('stdout', Buffer.from('defg'));
    output.append('stdout', Buffer.from('h'));
    output.append('stderr', Buffer.from('FGHI'));
    expect(output.parts.map((p) => `${p.stream}:${p.data.toString()}`)).toEqual([
      'stdout:abc',
      'stderr:E',
      'stdout:de',
      'stderr:FGHI',
    ]);
    expect(output.bytes).toBe(10);
    output.finish(DONE);
    expect(output.end).toEqual({ ...DONE, stdout_truncated: true, stderr_truncated: false });
  });

  test('nothing is added after the end, and the first end wins', async () => {
    const output = new JobOutput(jid(2), 100);
    expect(output.finish({ ...DONE, status: 'unknown', exit_code: null })).toBe(true);
    output.append('stdout', Buffer.from('late'));
    expect(output.finish(DONE)).toBe(false);
    expect(output.parts).toEqual([]);
    await expect(output.ended).resolves.toMatchObject({ status: 'unknown' });
  });

  test('listeners hear of each new chunk and of the end once', () => {
    const output = new JobOutput(jid(3), 100);
    const heard = vi.fn();
    output.onceChanged(heard);
    output.append('stdout', Buffer.from('a'));
    output.append('stdout', Buffer.from('b'));
    expect(heard).toHaveBeenCalledTimes(1);
    output.onceChanged(heard);
    output.append('stdout', Buffer.alloc(0));
    expect(heard).toHaveBeenCalledTimes(1);
    output.finish(DONE);
    expect(heard).toHaveBeenCalledTimes(2);
  });

  test('head reads the start of one stream across chunks', () => {
    const output = new JobOutput(jid(4), 100);
    output.append('stderr', Buffer.from('sudo: a pass'));
    output.append('stdout', Buffer.from('x'));
    output.append('stderr', Buffer.from('word is required\n'));
    expect(output.head('stderr', 17).toString()).toBe('sudo: a password ');
  });
});

describe('ResultStore', () => {
  const finished = (n: number, bytes = 0) => {
    const output = new JobOutput(jid(n), 1000);
    if (bytes) output.append('stdout', Buffer.alloc(bytes));
    output.finish(DONE);
    return output;
  };

  test('drops the oldest finished results beyond the count, never a running one, and says why', () => {
    const dropped: string[] = [];
    const store = new ResultStore({ maxResults: 2, maxBytes: 1e9 }, (output, reason) =>
      dropped.push(`${output.jid} ${reason}`),
    );
    const running = new JobOutput(jid(1), 1000);
    store.add(running);
    store.add(finished(2));
    store.add(finished(3));
    expect(store.all().map((o) => o.jid)).toEqual([jid(1), jid(3)]);
    expect(dropped).toEqual([`${jid(2)} more than 2 results are waiting for svcd`]);
    store.add(finished(4));
    expect(store.all().map((o) => o.jid)).toEqual([jid(1), jid(4)]);
  });

  test('drops the oldest finished results beyond the byte limit', () => {
    const dropped: string[] = [];
    const store = new ResultStore({ maxResults: 10, maxBytes: 250 }, (output) => dropped.push(output.jid));
    store.add(finished(1, 100));
    store.add(finished(2, 100));
    store.add(finished(3, 100));
    expect(dropped).toEqual([jid(1)]);
    expect(store.all().map((o) => o.jid)).toEqual([jid(2), jid(3)]);
  });

  test('a result that grew while running is dropped once it has finished and the limits are checked', () => {
    const store = new ResultStore({ maxResults: 10, maxBytes: 150 });
    const growing = new JobOutput(jid(1), 1000);
    store.add(growing);
    store.add(finished(2, 100));
    growing.append('stdout', Buffer.alloc(100));
    store.enforceLimits();
    expect(store.all().map((o) => o.jid)).toEqual([jid(1)]);
    growing.finish(DONE);
    store.enforceLimits();
    expect(store.size).toBe(1);
    store.remove(jid(1));
    expect(store.has(jid(1))).toBe(false);
  });
});

describe('setLongTimeout', () => {
  afterEach(() => vi.useRealTimers());

  test('fires after delays longer than setTimeout allows (up to 31 days), not at once', () => {
    vi.useFakeTimers();
    const fired = vi.fn();
    setLongTimeout(31 * 24 * 3600 * 1000, fired);
    vi.advanceTimersByTime(30 * 24 * 3600 * 1000);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(24 * 3600 * 1000);
    expect(fired).toHaveBeenCalledOnce();
  });

  test('can be cancelled', () => {
    vi.useFakeTimers();
    const fired = vi.fn();
    const cancel = setLongTimeout(30 * 24 * 3600 * 1000, fired);
    vi.advanceTimersByTime(25 * 24 * 3600 * 1000);
    cancel();
    vi.advanceTimersByTime(10 * 24 * 3600 * 1000);
    expect(fired).not.toHaveBeenCalled();
  });
});
