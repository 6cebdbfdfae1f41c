import { describe, expect, test } from 'vitest';
import {
  AdmissionAborted,
  AdmissionRefused,
  HandshakeAdmission,
  type HandshakeAdmissionLimits,
  type HandshakeTicket,
} from '../../src/gateway/handshake-admission.js';

/** A clock the test moves by hand. */
function manualClock(start = 1_000_000) {
  let at = start;
  return { now: () => at, advance: (ms: number) => (at += ms) };
}

/** No waiting unless a test asks for it. */
const limits = (over: Partial<HandshakeAdmissionLimits>): HandshakeAdmissionLimits => ({
  maxUnderWay: 2,
  maxRetryAfterS: 600,
  queueSeconds: 0,
  maxWaitMs: 20_000,
  maxPatient: 100,
  stillWaitingMs: 20,
  ...over,
});

/** A patient upgrade's ear: what it was told (how many wait before it), and a wait for the nth word. */
function ear() {
  const heard: number[] = [];
  let wake = () => undefined as void;
  return {
    heard,
    tell: (ahead: number) => {
      heard.push(ahead);
      wake();
    },
    until: (count: number) =>
      new Promise<void>((resolve) => {
        const check = () => (heard.length >= count ? resolve() : void (wake = check));
        check();
      }),
  };
}

async function refusedFor(admission: HandshakeAdmission): Promise<number> {
  const error: unknown = await admission.acquire().then(
    () => new Error('admitted'),
    (err: unknown) => err,
  );
  if (!(error instanceof AdmissionRefused)) throw error;
  return error.retryAfterS;
}

async function refusals(admission: HandshakeAdmission, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let n = 0; n < count; n++) out.push(await refusedFor(admission));
  return out;
}

/** `count` logins, `gapMs` apart. */
async function logins(
  admission: HandshakeAdmission,
  clock: ReturnType<typeof manualClock>,
  count: number,
  gapMs: number,
) {
  for (let n = 0; n < count; n++) {
    (await admission.acquire()).end(true);
    clock.advance(gapMs);
  }
}

describe('HandshakeAdmission', () => {
  test('admits up to the bound; a ticket ended (once) makes room', async () => {
    const clock = manualClock();
    const admission = new HandshakeAdmission(limits({}), clock.now);
    const first = await admission.acquire();
    await admission.acquire();
    expect(admission.active).toBe(2);
    await expect(admission.acquire()).rejects.toMatchObject({
      underWay: 2,
      message: '2 agent handshakes are under way; come back in 1 s',
    });
    first.end(false);
    first.end(true); // a second end frees nothing more
    expect(admission.active).toBe(1);
    await admission.acquire();
    await expect(admission.acquire()).rejects.toBeInstanceOf(AdmissionRefused);
  });

  test('agents refused one after another are promised later and later places, at the measured login rate', async () => {
    const clock = manualClock();
    // The assumed rate before any measurement is a place every 2 s: one agent a second for 2 places.
    const admission = new HandshakeAdmission(limits({}), clock.now);
    const held = [await admission.acquire(), await admission.acquire()];
    expect(await refusals(admission, 3)).toEqual([1, 2, 3]);
    for (const ticket of held) ticket.end(false);

    // 20 logins per second for six seconds (the earlier promises run out): each next refusal is 50 ms further on.
    await logins(admission, clock, 120, 50);
    held.splice(0, 2, await admission.acquire(), await admission.acquire());
    expect(admission.loginRate).toBeCloseTo(20, 6);
    const retries = await refusals(admission, 40);
    expect(retries.slice(0, 20).every((s) => s === 1)).toBe(true);
    expect(retries.slice(20).every((s) => s === 2)).toBe(true);
  });

  test('a rate that falls (handshakes no longer finishing) lengthens the promises, up to maxRetryAfterS', async () => {
    const clock = manualClock();
    const admission = new HandshakeAdmission(limits({ maxUnderWay: 4, maxRetryAfterS: 5 }), clock.now);
    await logins(admission, clock, 100, 10);
    const held = await Promise.all(Array.from({ length: 4 }, () => admission.acquire()));
    clock.advance(1000);
    expect(await refusedFor(admission)).toBe(1);
    // Nothing logs in for 10 s: the smoothed rate falls to the floor of a place every 2 s (2 per second here).
    clock.advance(10_000);
    const later = await refusals(admission, 50);
    expect(later.slice(0, 5)).toEqual([1, 1, 2, 2, 3]);
    expect(later[later.length - 1]).toBe(5);
    expect(later.filter((s) => s === 5).length).toBeGreaterThan(10);
    expect(held).toHaveLength(4);
  });

  test('logins that never came (closed handshakes) do not count in the rate', async () => {
    const clock = manualClock();
    const admission = new HandshakeAdmission(limits({ maxUnderWay: 8 }), clock.now);
    for (let n = 0; n < 200; n++) {
      (await admission.acquire()).end(false);
      clock.advance(10);
    }
    await admission.acquire();
    expect(admission.loginRate ?? 0).toBe(0);
  });

  test('past the bound upgrades wait, in order, while a place should come within queueSeconds', async () => {
    const clock = manualClock();
    // At the assumed place a second, 2 s of queue is 2 waiters; the third is refused, promised after them.
    const admission = new HandshakeAdmission(limits({ queueSeconds: 2 }), clock.now);
    const held = [await admission.acquire(), await admission.acquire()];
    const order: string[] = [];
    const waiting = ['a', 'b'].map((name) =>
      admission.acquire().then((ticket) => {
        order.push(name);
        return ticket;
      }),
    );
    expect(admission.waiting).toBe(2);
    expect(await refusedFor(admission)).toBe(3);
    held[0]?.end(true);
    const a: HandshakeTicket = await waiting[0]!;
    expect([admission.active, admission.waiting]).toEqual([2, 1]);
    held[1]?.end(false);
    await waiting[1];
    expect(order).toEqual(['a', 'b']);
    a.end(true);
    expect([admission.active, admission.waiting]).toEqual([1, 0]);
  });

  test('a patient upgrade waits its turn past queueSeconds and maxWaitMs, told how many wait before it', async () => {
    const admission = new HandshakeAdmission(
      limits({ maxUnderWay: 1, queueSeconds: 0, maxWaitMs: 30, maxPatient: 2, stillWaitingMs: 20 }),
    );
    const held = await admission.acquire();
    const [first, second] = [ear(), ear()];
    const waitingFirst = admission.acquire(undefined, first.tell);
    const waitingSecond = admission.acquire(undefined, second.tell);
    // An upgrade that is not patient is refused at once (no queue for it); a third patient one is past maxPatient.
    await expect(admission.acquire()).rejects.toBeInstanceOf(AdmissionRefused);
    await expect(admission.acquire(undefined, () => undefined)).rejects.toBeInstanceOf(AdmissionRefused);
    // Well past maxWaitMs both still wait, told again and again.
    await second.until(4);
    expect(admission.waiting).toBe(2);
    expect(new Set(first.heard)).toEqual(new Set([0]));
    expect(new Set(second.heard)).toEqual(new Set([1]));
    held.end(true);
    const ticket = await waitingFirst;
    const told = second.heard.length;
    await second.until(told + 1);
    expect(second.heard.at(-1)).toBe(0);
    ticket.end(true);
    (await waitingSecond).end(true);
    expect([admission.active, admission.waiting]).toEqual([0, 0]);
    // Both are gone from the count of patient ones: two may wait again.
    const again = await admission.acquire();
    const waits = [
      admission.acquire(undefined, () => undefined),
      admission.acquire(undefined, () => undefined),
    ];
    expect(admission.waiting).toBe(2);
    admission.close();
    for (const waiter of waits) await expect(waiter).rejects.toMatchObject({ retryAfterS: 1 });
    again.end(false);
  });

  test('a waiter leaves on abort, is refused after maxWaitMs, and close() refuses the rest', async () => {
    const admission = new HandshakeAdmission(limits({ maxUnderWay: 1, queueSeconds: 60, maxWaitMs: 50 }));
    await admission.acquire();
    const abort = new AbortController();
    const aborted = admission.acquire(abort.signal);
    abort.abort();
    await expect(aborted).rejects.toBeInstanceOf(AdmissionAborted);
    await expect(admission.acquire()).rejects.toBeInstanceOf(AdmissionRefused);
    expect(admission.waiting).toBe(0);

    const slow = new HandshakeAdmission(limits({ maxUnderWay: 1, queueSeconds: 60, maxWaitMs: 60_000 }));
    await slow.acquire();
    const waiter = slow.acquire();
    slow.close();
    await expect(waiter).rejects.toMatchObject({ retryAfterS: 1 });
    expect(slow.waiting).toBe(0);
  });
});
