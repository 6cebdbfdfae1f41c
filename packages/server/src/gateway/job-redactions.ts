import type { JobRun } from '@svc/protocol';
import type { SecretValue } from '@svc/platform';
import { RESULT_GRACE_MS } from '../core/jobs/ports.js';

/**
 * The secret values of the jobs this node sent, by jid, so that their output is redacted here too (the agent
 * redacts first; this covers an agent that did not). Kept until the result is stored, or at most until the job's
 * result can no longer come (its timeout plus twice the result grace), so an agent that never answers leaks
 * nothing. Per node: a result arrives on the node holding the client's connection, which is the one that sent it.
 */
export class JobRedactions {
  private readonly byJid = new Map<string, { secrets: SecretValue[]; timer: NodeJS.Timeout }>();

  /** Remembers the job's secrets when it has any. */
  remember(job: JobRun): void {
    const secrets = secretsOf(job);
    if (secrets.length === 0) return;
    this.forget(job.jid);
    const timer = setTimeout(() => this.byJid.delete(job.jid), job.timeout_sec * 1000 + 2 * RESULT_GRACE_MS);
    timer.unref();
    this.byJid.set(job.jid, { secrets, timer });
  }

  secretsOf(jid: string): readonly SecretValue[] {
    return this.byJid.get(jid)?.secrets ?? [];
  }

  forget(jid: string): void {
    const held = this.byJid.get(jid);
    if (!held) return;
    clearTimeout(held.timer);
    this.byJid.delete(jid);
  }

  get size(): number {
    return this.byJid.size;
  }
}

/** The values of the job's secret variables, each with its label. */
export function secretsOf(job: Pick<JobRun, 'env' | 'redact'>): SecretValue[] {
  return Object.entries(job.redact ?? {}).flatMap(([name, label]) => {
    const value = job.env?.[name];
    return value === undefined ? [] : [{ value, label }];
  });
}
