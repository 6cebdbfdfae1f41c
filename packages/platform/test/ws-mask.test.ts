import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { loadNativeMask, maskInPlace } from '../src/ws-mask.js';

/** RFC 6455 5.3 as written: byte i of the payload XOR key byte i mod 4. */
function naiveMask(data: Buffer, key: Buffer, offset: number): Buffer {
  return Buffer.from(data.map((byte, i) => byte ^ (key[(offset + i) % 4] as number)));
}

test('masking matches RFC 6455 byte for byte, whatever the length, alignment and payload offset', () => {
  const key = randomBytes(4);
  const backing = randomBytes(4096 + 8);
  for (const length of [0, 1, 3, 4, 5, 63, 64, 65, 100, 1023, 4096])
    for (const start of [0, 1, 2, 3, 5])
      for (const offset of [0, 1, 2, 3, 7]) {
        const data = Buffer.from(backing.subarray(start, start + length));
        // A view at an odd address of its ArrayBuffer, as slices of socket reads are.
        const view = Buffer.alloc(length + 8).subarray(start, start + length);
        data.copy(view);
        const expected = naiveMask(data, key, offset);
        maskInPlace(view, key, offset);
        expect(view.equals(expected), `length ${length} start ${start} offset ${offset}`).toBe(true);
      }
});

test('masking twice gives the payload back, also when done in pieces', () => {
  const key = randomBytes(4);
  const payload = randomBytes(70_001);
  const data = Buffer.from(payload);
  maskInPlace(data, key);
  expect(data.equals(naiveMask(payload, key, 0))).toBe(true);
  // Unmasked in three slices at the offsets they have in the frame.
  for (const [from, to] of [
    [0, 4_097],
    [4_097, 4_103],
    [4_103, 70_001],
  ] as const)
    maskInPlace(data.subarray(from, to), key, from);
  expect(data.equals(payload)).toBe(true);
});

test("bufferutil's native XOR, where installed, masks large chunks the same, at any payload offset", async () => {
  expect(await loadNativeMask()).toBe(true);
  const key = randomBytes(4);
  for (const length of [16 * 1024, 32 * 1024 + 3])
    for (const offset of [0, 1, 2, 3]) {
      const data = randomBytes(length);
      const expected = naiveMask(data, key, offset);
      maskInPlace(data, key, offset);
      expect(data.equals(expected), `length ${length} offset ${offset}`).toBe(true);
    }
});
