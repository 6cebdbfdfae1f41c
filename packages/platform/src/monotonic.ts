/**
 * A monotonic clock in milliseconds. `performance.now()` would do, but the first touch of the `performance` global
 * loads node's perf_hooks (~13 ms of CPU on this machine, 2026-11-28), which an agent then paid in its first job.
 */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;
