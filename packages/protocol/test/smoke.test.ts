import { expect, test } from 'vitest';
import { PROTOCOL_VERSION } from '@svc/protocol';

test('protocol version is a positive integer', () => {
  expect(PROTOCOL_VERSION).toBeGreaterThan(0);
});
