/** bufferutil (ws's optional native helper, an optional dependency here): the part used by ws-mask.ts. */
declare module 'bufferutil' {
  /** XORs `buffer` in place with the 4-byte `mask`, from its first byte. */
  export function unmask(buffer: Buffer, mask: Buffer): void;
}
