import type { JobRun } from '@svc/protocol';
import { StreamRedactor } from '@svc/platform';
import { describe, expect, test } from 'vitest';
import { RESULT_GRACE_MS } from '../../src/core/jobs/ports.js';
import { JobRedactions, secretsOf } from '../../src/gateway/job-redactions.js';

const run = (jid: string, shared: Pick<JobRun, 'env' | 'redact'>): JobRun =>
  ({ jid, command: 'env', timeout_sec: 60, ...shared }) as JobRun;

describe('JobRedactions', () => {
  test('keeps a job’s secrets until its result is stored or can no longer come', () => {
    let now = 1_000;
    const redactions = new JobRedactions(() => now);
    const shared = { env: { DB_PASS: 's3cret', MODE: 'x' }, redact: { DB_PASS: 'db-prod' } };
    redactions.remember(run('a', shared));
    redactions.remember(run('b', shared));
    redactions.remember(run('plain', { env: { MODE: 'x' } }));
    expect(redactions.secretsOf('a')).toEqual([{ value: 's3cret', label: 'db-prod' }]);
    expect(redactions.size).toBe(2);

    redactions.forget('a');
    expect(redactions.secretsOf('a')).toEqual([]);
    now += 60_000 + 2 * RESULT_GRACE_MS - 1;
    redactions.forgetExpired();
    expect(redactions.secretsOf('b')).toHaveLength(1);
    now += 1;
    redactions.forgetExpired();
    expect(redactions.size).toBe(0);
  });

  test('the children of one run share one list of secrets, and a redactor prepares it once', () => {
    const shared = { env: { TOKEN: 'abc123' }, redact: { TOKEN: 'api' } };
    const first = secretsOf(run('a', shared));
    expect(secretsOf(run('b', shared))).toBe(first);
    // Another env under the same names gets its own values.
    expect(secretsOf({ env: { TOKEN: 'zzz' }, redact: shared.redact })).toEqual([
      { value: 'zzz', label: 'api' },
    ]);
    const out = new StreamRedactor(first).push(Buffer.from('token=abc123 again abc123'));
    expect(out.toString()).toBe('token=[redacted:api] again [redacted:api]');
  });
});
