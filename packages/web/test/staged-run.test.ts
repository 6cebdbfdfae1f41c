import { describe, expect, test } from 'vitest';
import { noStaging, stagedBody, stagedOf } from '../src/lib/staged-run.js';

describe('staged-run fields', () => {
  test('empty fields are left out; digits become numbers, the rest goes as typed', () => {
    expect(stagedBody(noStaging())).toEqual({});
    expect(stagedBody({ batchSize: ' 5 ', batchDelay: '30s', maxFailures: '10%' })).toEqual({
      batch_size: 5,
      batch_delay: '30s',
      max_failures: '10%',
    });
    expect(stagedBody({ batchSize: '25%', batchDelay: '0', maxFailures: '' })).toEqual({
      batch_size: '25%',
      batch_delay: 0,
    });
  });

  test('a stored schedule shows its options (batch_delay in seconds) and sends them back unchanged', () => {
    const stored = { batch_size: '10%', batch_delay: 300, max_failures: 3 };
    expect(stagedOf(stored)).toEqual({ batchSize: '10%', batchDelay: '300', maxFailures: '3' });
    expect(stagedBody(stagedOf(stored))).toEqual(stored);
    expect(stagedOf({})).toEqual(noStaging());
  });
});
