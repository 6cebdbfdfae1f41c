import type { JobStatus } from '@svc/protocol';
import type { JobStatusCounts } from './ports.js';

/**
 * A multi-client run's overall status from its children: `running` while a child runs or waits in the queue, or
 * a target has no child yet (`targets` null for a run stored before targets were: its children are then all of
 * them); afterwards `cancelled` when any child was cancelled, `skipped` when a staged run stopped before some
 * targets (max_failures, or svcd stopped), `failed` when any child failed, `expired` when
 * any child's client never came within queue_ttl, `unknown` when any child's outcome is unknown, else
 * `successful`.
 */
export function runStatus(counts: JobStatusCounts, targets: number | null): JobStatus {
  const children = Object.values(counts).reduce((sum, n) => sum + n, 0);
  if (counts.running > 0 || counts.queued > 0 || children < (targets ?? children)) return 'running';
  if (counts.cancelled > 0) return 'cancelled';
  if (counts.skipped > 0) return 'skipped';
  if (counts.failed > 0) return 'failed';
  if (counts.expired > 0) return 'expired';
  if (counts.unknown > 0) return 'unknown';
  return 'successful';
}
