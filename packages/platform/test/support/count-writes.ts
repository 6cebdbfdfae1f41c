import type { Socket } from 'node:net';

/** Counts the writes a socket hands to the kernel: one per `_write` or `_writev` call. */
export function countWrites(socket: Socket): { readonly count: number } {
  const counter = { count: 0 };
  const internals = socket as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
  for (const method of ['_write', '_writev'] as const) {
    const original = internals[method].bind(socket);
    internals[method] = (...args: unknown[]) => {
      counter.count++;
      return original(...args);
    };
  }
  return counter;
}
