import type { JobRun } from '@svc/protocol';
import type { SecretValue } from '@svc/platform';
import { RESULT_GRACE_MS } from '../core/jobs/ports.js';

/** How often jobs whose result can no longer come are forgotten. */
const SWEEP_MS = 60_000;

/**
 * The secret values of the jobs this node sent, by jid, so that their output is redacted here too (the agent
 * redacts first; this covers an agent that did not). Kept until the result is stored, or at most until the job's
 * result can no longer come (its timeout plus twice the result grace, checked by one sweep a minute), so an agent
 * that never answers leaks nothing for long. Per node: a result arrives on the node holding the client's
 * connection, which is the one that sent it.
 */
export class JobRedactions {
  private readonly byJid = new Map<string, { secrets: readonly SecretValue[]; until: number }>();
  private sweep: NodeJS.Timeout | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  /** Remembers the job's secrets when it has any. */
  remember(job: JobRun): void {
    const secrets = secretsOf(job);
    if (secrets.length === 0) return;
    this.byJid.set(job.jid, { secrets, until: this.now() + job.timeout_sec * 1000 + 2 * RESULT_GRACE_MS });
    this.sweep ??= setInterval(() => this.forgetExpired(), SWEEP_MS).unref();
  }

  secretsOf(jid: string): readonly SecretValue[] {
    return this.byJid.get(jid)?.secrets ?? [];
  }

  forget(jid: string): void {
    this.byJid.delete(jid);
    if (this.byJid.size === 0) this.stopSweep();
  }

  /** Forgets the jobs whose result can no longer come. */
  forgetExpired(): void {
    const now = this.now();
    for (const [jid, { until }] of this.byJid) if (until <= now) this.byJid.delete(jid);
    if (this.byJid.size === 0) this.stopSweep();
  }

  get size(): number {
    return this.byJid.size;
  }

  private stopSweep(): void {
    clearInterval(this.sweep);
    this.sweep = undefined;
  }
}

/** The secrets of one run's variables: its children share `env` and `redact`, so they share one list too. */
const secretsByRedact = new WeakMap<
  NonNullable<JobRun['redact']>,
  { env: JobRun['env']; secrets: SecretValue[] }
>();

/** The values of the job's secret variables, each with its label. */
export function secretsOf(job: Pick<JobRun, 'env' | 'redact'>): readonly SecretValue[] {
  const { redact, env } = job;
  if (!redact) return [];
  const known = secretsByRedact.get(redact);
  if (known && known.env === env) return known.secrets;
  const secrets = Object.entries(redact).flatMap(([name, label]) => {
    const value = env?.[name];
    return value === undefined ? [] : [{ value, label }];
  });
  secretsByRedact.set(redact, { env, secrets });
  return secrets;
}
