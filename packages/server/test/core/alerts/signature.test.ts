import { createHmac } from 'node:crypto';
import { expect, test } from 'vitest';
import { signAlert, verifyAlert } from '../../../src/core/alerts/signature.js';
import { MAX_RETRY_DELAY_MS, retryDelayMs } from '../../../src/core/alerts/backoff.js';

test('the signature is the HMAC-SHA256 of "<timestamp>.<body>" with the rule secret, as hex', () => {
  const body = '{"event":"run_failed"}';
  const expected = createHmac('sha256', 'a-secret-of-16-chars').update(`1700000000.${body}`).digest('hex');
  expect(signAlert('a-secret-of-16-chars', 1700000000, body)).toBe(`sha256=${expected}`);
});

test('verification fails for another body, timestamp or secret', () => {
  const header = signAlert('secret-one-16chars', 100, 'body');
  expect(verifyAlert('secret-one-16chars', 100, 'body', header)).toBe(true);
  expect(verifyAlert('secret-one-16chars', 100, 'bodY', header)).toBe(false);
  expect(verifyAlert('secret-one-16chars', 101, 'body', header)).toBe(false);
  expect(verifyAlert('secret-two-16chars', 100, 'body', header)).toBe(false);
  expect(verifyAlert('secret-one-16chars', 100, 'body', 'sha256=00')).toBe(false);
});

test('retries wait base, 2×base, 4×base … and never more than the cap', () => {
  expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, 2000))).toEqual([2000, 4000, 8000, 16000]);
  expect(retryDelayMs(30, 2000)).toBe(MAX_RETRY_DELAY_MS);
});
