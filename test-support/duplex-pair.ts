import { Duplex, PassThrough } from 'node:stream';

/** Two connected in-memory duplex streams: what one writes, the other reads. */
export function duplexPair(): [Duplex, Duplex] {
  const aToB = new PassThrough();
  const bToA = new PassThrough();
  return [Duplex.from({ readable: bToA, writable: aToB }), Duplex.from({ readable: aToB, writable: bToA })];
}
