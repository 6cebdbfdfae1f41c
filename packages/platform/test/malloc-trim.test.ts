import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { collectGarbage } from '../src/gc.js';
import { keepCHeapThresholds, trimCHeap } from '../src/malloc-trim.js';

const MIB = 1024 * 1024;

/** Resident anonymous memory of this process, in bytes. */
const rssAnon = () =>
  Number(/RssAnon:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;

test('trimCHeap gives back the C heap pages that freed Buffers leave between live ones', async () => {
  // 64 KiB Buffers come from glibc's heap (below its mmap threshold); a small Buffer allocated after each one
  // stays alive, so free() can give nothing back from the top of the heap once the large ones are gone.
  const large: Buffer[] = [];
  const pins: Buffer[] = [];
  for (let i = 0; i < 512; i++) {
    large.push(Buffer.allocUnsafeSlow(64 * 1024).fill(i));
    pins.push(Buffer.allocUnsafeSlow(256).fill(i));
  }
  large.length = 0;
  collectGarbage('major');
  collectGarbage('major');
  const before = rssAnon();
  const trimMs = await trimCHeap();
  const after = rssAnon();
  expect(trimMs).toEqual(expect.any(Number));
  // 32 MiB were freed; most of it comes back.
  expect(before - after).toBeGreaterThan(16 * MIB);
  expect(pins.every((pin, i) => pin[0] === (i & 0xff))).toBe(true);
});

test('keepCHeapThresholds sets the mmap and trim thresholds of glibc (the addon is built here)', async () => {
  expect(await keepCHeapThresholds()).toBe(true);
});
