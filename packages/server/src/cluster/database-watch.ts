import { sql } from 'kysely';
import type { ClientsLog } from '../core/clients/ports.js';
import type { Database } from '../storage/database.js';

/** Longest a probe may take before the database counts as lost. */
const PROBE_TIMEOUT_MS = 2_000;

/**
 * Probes the shared database every heartbeat. A cluster node that cannot reach it stops taking agents (503 on
 * the agent listener) rather than hold clients it cannot record while the other nodes go on; its own agents
 * stay. It takes agents again after the next probe that succeeds.
 */
export class DatabaseWatch {
  private lostSince: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private probing = false;

  constructor(
    private readonly database: Database,
    private readonly intervalMs: number,
    private readonly log: ClientsLog,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.probe(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Why new agents are refused now, or undefined while the database answers. */
  refusal(): string | undefined {
    if (this.lostSince === undefined) return undefined;
    return `the database has not answered since ${new Date(this.lostSince).toISOString()}; this node takes no agents until it does`;
  }

  async probe(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        sql`select 1`.execute(this.database.db),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)),
            PROBE_TIMEOUT_MS,
          );
        }),
      ]);
      if (this.lostSince !== undefined) {
        this.lostSince = undefined;
        this.log.info({}, 'the database answers again: taking agents again');
      }
    } catch (err) {
      if (this.lostSince === undefined) {
        this.lostSince = Date.now();
        this.log.warn({ err }, 'lost the database: refusing new agents (503) until it answers again');
      }
    } finally {
      clearTimeout(timer);
      this.probing = false;
    }
  }
}
