import type { JobStatus } from '@svc/protocol';
import type { JobStatusCounts } from './ports.js';

/**
 * A multi-client run's overall status from its children: `running` while a child runs or a target has no child
 * yet (`targets` null for a run stored before targets were: its children are then all of them); afterwards
 * `failed` when any child failed, `unknown` when any child's outcome is unknown, else `successful`.
 */
export function runStatus(counts: JobStatusCounts, targets: number | null): JobStatus {
  const children = counts.running + counts.successful + counts.failed + counts.unknown;
  if (counts.running > 0 || children < (targets ?? children)) return 'running';
  if (counts.failed > 0) return 'failed';
  if (counts.unknown > 0) return 'unknown';
  return 'successful';
}
