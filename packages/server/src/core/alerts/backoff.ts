/** Longest wait between two attempts. */
export const MAX_RETRY_DELAY_MS = 600_000;

/** The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed: base, 2×base, 4×base … capped. */
export function retryDelayMs(attempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** (attempt - 1), MAX_RETRY_DELAY_MS);
}
