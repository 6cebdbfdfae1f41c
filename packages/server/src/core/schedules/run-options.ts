import type { ScheduleDefinition } from './ports.js';

type RunOptions = Pick<
  ScheduleDefinition,
  'queue_ttl' | 'timeout_kill' | 'batch_size' | 'batch_delay' | 'max_failures'
>;

/** The delivery and staged-rollout options a schedule gives, without the ones it leaves out. */
export function runOptionsOf(d: ScheduleDefinition): {
  [K in keyof RunOptions]?: Exclude<RunOptions[K], undefined>;
} {
  const options: { [K in keyof RunOptions]?: Exclude<RunOptions[K], undefined> } = {};
  if (d.queue_ttl !== undefined) options.queue_ttl = d.queue_ttl;
  if (d.timeout_kill !== undefined) options.timeout_kill = d.timeout_kill;
  if (d.batch_size !== undefined) options.batch_size = d.batch_size;
  if (d.batch_delay !== undefined) options.batch_delay = d.batch_delay;
  if (d.max_failures !== undefined) options.max_failures = d.max_failures;
  return options;
}
