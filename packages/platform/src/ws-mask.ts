/** Below this many bytes a chunk is XORed byte by byte: a Uint32Array view costs more than it saves. */
const MIN_WORDWISE = 64;
const keyWord = new Uint8Array(4);
const keyWord32 = new Uint32Array(keyWord.buffer);

/**
 * XORs `data` in place with the 4-byte masking `key` (RFC 6455 5.3), `data` starting `offset` bytes into the
 * frame's payload. Masking and unmasking are the same. The aligned middle is XORed 32 bits at a time through a
 * Uint32Array view; the key is rotated to the payload position of the first aligned byte.
 */
export function maskInPlace(data: Uint8Array, key: Uint8Array, offset = 0): void {
  const length = data.length;
  let i = 0;
  if (length >= MIN_WORDWISE) {
    const misaligned = data.byteOffset & 3;
    const head = misaligned === 0 ? 0 : 4 - misaligned;
    for (; i < head; i++) data[i] = (data[i] as number) ^ (key[(offset + i) & 3] as number);
    const phase = offset + i;
    keyWord[0] = key[phase & 3] as number;
    keyWord[1] = key[(phase + 1) & 3] as number;
    keyWord[2] = key[(phase + 2) & 3] as number;
    keyWord[3] = key[(phase + 3) & 3] as number;
    const word = keyWord32[0] as number;
    const words = (length - i) >>> 2;
    const view = new Uint32Array(data.buffer, data.byteOffset + i, words);
    for (let w = 0; w < words; w++) view[w] = (view[w] as number) ^ word;
    i += words * 4;
  }
  for (; i < length; i++) data[i] = (data[i] as number) ^ (key[(offset + i) & 3] as number);
}
