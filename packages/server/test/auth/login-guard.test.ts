import { describe, expect, test } from 'vitest';
import { AppError } from '@svc/protocol';
import { LoginGuard, type LoginGuardSettings } from '../../src/core/auth/login-guard.js';
import { memoryLoginThrottleStore } from '../../src/core/auth/memory-login-throttle-store.js';

class StepClock {
  constructor(private ms = Date.UTC(2026, 0, 1)) {}
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

const SETTINGS: LoginGuardSettings = {
  maxFailedLogin: 10,
  banTimeMs: 10 * 60_000,
  userLoginWaitMs: 2000,
  userGuessCeiling: 30,
  userGuessWindowMs: 15 * 60_000,
  knownAddressForMs: 30 * 24 * 3600_000,
};

function guardWith(settings: Partial<LoginGuardSettings> = {}) {
  const clock = new StepClock();
  const guard = new LoginGuard({ ...SETTINGS, ...settings }, clock, memoryLoginThrottleStore());
  /** The HTTP status the guard answers with, or 'may try'. */
  const verdict = async (ip: string, username: string): Promise<number | 'may try'> => {
    try {
      await guard.assertMayTry(ip, username);
      return 'may try';
    } catch (err) {
      if (err instanceof AppError) return err.kind === 'banned' ? 423 : 429;
      throw err;
    }
  };
  return { clock, guard, verdict };
}

/** A guesser that tries one wrong password every 2 s, each time from a new address. */
async function guessFromChangingAddresses(
  { clock, guard, verdict }: ReturnType<typeof guardWith>,
  guesses: number,
  onEach: () => Promise<void> = () => Promise.resolve(),
) {
  const answers: (number | 'may try')[] = [];
  for (let i = 0; i < guesses; i++) {
    const ip = `198.51.${Math.floor(i / 250) % 250}.${(i % 250) + 1}`;
    const answer = await verdict(ip, 'alice');
    answers.push(answer);
    if (answer === 'may try') await guard.recordFailure(ip, 'alice');
    await onEach();
    clock.advance(2000);
  }
  return answers;
}

describe('LoginGuard', () => {
  test('after a failure the user waits userLoginWaitMs at that address only', async () => {
    const g = guardWith();
    await g.guard.recordFailure('203.0.113.1', 'alice');
    expect(await g.verdict('203.0.113.1', 'alice')).toBe(429);
    expect(await g.verdict('203.0.113.2', 'alice')).toBe('may try');
    expect(await g.verdict('203.0.113.1', 'bob')).toBe('may try');
    g.clock.advance(1999);
    expect(await g.verdict('203.0.113.1', 'alice')).toBe(429);
    g.clock.advance(1);
    expect(await g.verdict('203.0.113.1', 'alice')).toBe('may try');
  });

  test('maxFailedLogin failures in a row from one address ban it for banTimeMs; a success resets the count', async () => {
    const g = guardWith({ maxFailedLogin: 3, userLoginWaitMs: 0 });
    await g.guard.recordFailure('203.0.113.1', 'u1');
    await g.guard.recordFailure('203.0.113.1', 'u2');
    await g.guard.recordSuccess('203.0.113.1', 'alice');
    await g.guard.recordFailure('203.0.113.1', 'u3');
    expect(await g.verdict('203.0.113.1', 'alice')).toBe('may try');
    await g.guard.recordFailure('203.0.113.1', 'u4');
    await g.guard.recordFailure('203.0.113.1', 'u5');
    expect(await g.verdict('203.0.113.1', 'alice')).toBe(423);
    expect(await g.verdict('203.0.113.2', 'alice')).toBe('may try');
    g.clock.advance(SETTINGS.banTimeMs);
    expect(await g.verdict('203.0.113.1', 'alice')).toBe('may try');
  });

  test('a guesser from changing addresses reaches the per-user ceiling; then unknown addresses wait for the window', async () => {
    const g = guardWith();
    const answers = await guessFromChangingAddresses(g, 40);
    // 30 guesses in 60 s reach the ceiling; the next 10 addresses are refused.
    expect(answers.slice(0, 30)).toEqual(Array(30).fill('may try'));
    expect(answers.slice(30)).toEqual(Array(10).fill(429));
    expect(await g.verdict('192.0.2.77', 'alice')).toBe(429);
    // Other users are not affected.
    expect(await g.verdict('192.0.2.77', 'bob')).toBe('may try');
    // The window (15 min from the first guess) ends: guessing may go on, 30 per window.
    g.clock.advance(SETTINGS.userGuessWindowMs! - 80_000);
    expect(await g.verdict('192.0.2.77', 'alice')).toBe('may try');
  });

  test('two hours of guessing from changing addresses never keep the user from logging in at a known address', async () => {
    const g = guardWith();
    await g.guard.recordSuccess('203.0.113.50', 'alice');
    const atHome: (number | 'may try')[] = [];
    let guess = 0;
    await guessFromChangingAddresses(g, 3600, async () => {
      guess += 1;
      // The user logs in from home every 5 minutes, once with a typo first.
      if (guess % 150 !== 0) return;
      if (guess % 300 === 0) {
        atHome.push(await g.verdict('203.0.113.50', 'alice'));
        await g.guard.recordFailure('203.0.113.50', 'alice');
        g.clock.advance(SETTINGS.userLoginWaitMs);
      }
      atHome.push(await g.verdict('203.0.113.50', 'alice'));
      await g.guard.recordSuccess('203.0.113.50', 'alice');
    });
    expect(atHome.length).toBe(36);
    expect(atHome).toEqual(Array(36).fill('may try'));
  });

  test('guesses through a second Unicode form of the name count for the same user', async () => {
    const g = guardWith({ userGuessCeiling: 2 });
    await g.guard.recordFailure('192.0.2.1', 'jos\u00e9');
    await g.guard.recordFailure('192.0.2.2', 'jose\u0301');
    expect(await g.verdict('192.0.2.3', 'jos\u00e9')).toBe(429);
  });

  test('a ceiling of 0 turns the per-user ceiling off', async () => {
    const g = guardWith({ userGuessCeiling: 0 });
    const answers = await guessFromChangingAddresses(g, 100);
    expect(answers).toEqual(Array(100).fill('may try'));
  });

  test('a known address is forgotten knownAddressForMs after its last success', async () => {
    const g = guardWith({ userGuessCeiling: 1, knownAddressForMs: 60_000 });
    await g.guard.recordSuccess('203.0.113.50', 'alice');
    await g.guard.recordFailure('192.0.2.1', 'alice');
    expect(await g.verdict('203.0.113.50', 'alice')).toBe('may try');
    g.clock.advance(60_000);
    await g.guard.recordFailure('192.0.2.2', 'alice');
    expect(await g.verdict('203.0.113.50', 'alice')).toBe(429);
  });
});
