import crypto from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { pooledRandomFill, ssh2 } from '@svc/platform/ssh2';

/** A stand-in CSPRNG that counts its calls and fills with a running counter, so every byte handed out is known. */
function countingSource() {
  let next = 0;
  const calls: number[] = [];
  const fill = (buffer: Buffer, offset = 0, size = buffer.length - offset) => {
    calls.push(size);
    for (let i = offset; i < offset + size; i++) buffer[i] = next++ & 0xff;
    return buffer;
  };
  return { fill, calls };
}

describe('pooled randomFillSync for ssh2', () => {
  test('fills exactly the asked range, hands out each pool byte once, and refills when used up', () => {
    const source = countingSource();
    const pooled = pooledRandomFill(source.fill);
    const target = Buffer.alloc(20, 0xee);
    pooled(target, 4, 8);
    expect([...target.subarray(0, 4)]).toEqual([0xee, 0xee, 0xee, 0xee]);
    expect([...target.subarray(4, 12)]).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect([...target.subarray(12)]).toEqual(Array(8).fill(0xee));
    pooled(target, 0, 4);
    expect([...target.subarray(0, 4)]).toEqual([8, 9, 10, 11]);
    expect(source.calls).toEqual([16 * 1024]);
    // 38 000 bytes in 19-byte requests: the pool is fetched again each time it cannot serve a whole request.
    for (let i = 0; i < 2000; i++) pooled(Buffer.alloc(19));
    expect(source.calls).toEqual([16 * 1024, 16 * 1024, 16 * 1024]);
  });

  test('large requests and non-Buffer targets go straight to the source', () => {
    const source = countingSource();
    const pooled = pooledRandomFill(source.fill);
    pooled(Buffer.alloc(1000));
    expect(source.calls).toEqual([1000]);
  });

  test('ssh2 is loaded, and node:crypto keeps its own randomFillSync for everyone else', () => {
    expect(typeof ssh2.Client).toBe('function');
    expect(typeof ssh2.Server).toBe('function');
    expect(crypto.randomFillSync.name).toBe('randomFillSync');
    const a = crypto.randomFillSync(Buffer.alloc(32));
    const b = crypto.randomFillSync(Buffer.alloc(32));
    expect(a.equals(b)).toBe(false);
  });
});

describe('crypto swapped for ssh2 alone', () => {
  test('node:crypto keeps its own key functions for everyone else', () => {
    for (const own of [
      crypto.generateKeyPairSync,
      crypto.createPublicKey,
      crypto.verify,
      crypto.randomFillSync,
    ])
      expect(own.name).not.toMatch(/^ssh2/);
    const { publicKey } = crypto.generateKeyPairSync('x25519');
    expect(Object.hasOwn(publicKey, 'export')).toBe(false);
  });
});
