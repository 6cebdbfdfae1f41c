import { describe, expect, test } from 'vitest';
import { StreamRedactor, redactText, type SecretValue } from '../src/secret-redactor.js';

const DB: SecretValue = { value: 's3cr3t-Pa55', label: 'db-prod' };

/** Feeds `text` split at the given offsets and returns what came out. */
function through(secrets: readonly SecretValue[], text: string, cuts: number[]): string {
  const redactor = new StreamRedactor(secrets);
  const bytes = Buffer.from(text, 'utf8');
  const out: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(redactor.push(bytes.subarray(from, cut)));
    from = cut;
  }
  out.push(redactor.end());
  return Buffer.concat(out).toString('utf8');
}

describe('StreamRedactor', () => {
  test('replaces every occurrence in one chunk', () => {
    expect(through([DB], 'a s3cr3t-Pa55 b s3cr3t-Pa55', [])).toBe(
      'a [redacted:db-prod] b [redacted:db-prod]',
    );
  });

  test('catches a value split at every possible chunk boundary', () => {
    const text = 'before s3cr3t-Pa55 after';
    for (let cut = 0; cut <= text.length; cut += 1)
      expect(through([DB], text, [cut])).toBe('before [redacted:db-prod] after');
  });

  test('catches a value split over many one-byte chunks', () => {
    const text = 'xs3cr3t-Pa55s3cr3t-Pa55y';
    const cuts = Array.from({ length: text.length }, (_, i) => i);
    expect(through([DB], text, cuts)).toBe('x[redacted:db-prod][redacted:db-prod]y');
  });

  test('passes a chunk that cannot start a value at once, and holds back only a possible start', () => {
    const redactor = new StreamRedactor([DB]);
    expect(redactor.push(Buffer.from('hello\n')).toString()).toBe('hello\n');
    expect(redactor.push(Buffer.from('tail s3cr')).toString()).toBe('tail ');
    expect(redactor.push(Buffer.from('X')).toString()).toBe('s3crX');
    expect(redactor.end().length).toBe(0);
  });

  test('a held start that never completes comes out at the end', () => {
    expect(through([DB], 'ends with s3cr3t-Pa5', [])).toBe('ends with s3cr3t-Pa5');
  });

  test('several values: the longest wins at one position, each gets its own label', () => {
    const secrets = [
      { value: 'abc', label: 'short' },
      { value: 'abcdef', label: 'long' },
      { value: 'zz', label: 'other' },
    ];
    expect(through(secrets, 'abcdef abc zz', [4])).toBe('[redacted:long] [redacted:short] [redacted:other]');
    expect(through(secrets, 'abcdeX', [3])).toBe('[redacted:short]deX');
  });

  test('multi-byte values split inside a character', () => {
    const secret = { value: 'pässwörd✓', label: 'utf' };
    const text = '→pässwörd✓←';
    const length = Buffer.byteLength(text);
    for (let cut = 0; cut <= length; cut += 1)
      expect(through([secret], text, [cut])).toBe('→[redacted:utf]←');
  });

  test('without secrets, chunks pass unchanged', () => {
    const redactor = new StreamRedactor([{ value: '', label: 'empty' }]);
    const chunk = Buffer.from('anything');
    expect(redactor.active).toBe(false);
    expect(redactor.push(chunk)).toBe(chunk);
  });

  test('redactText on a whole text', () => {
    expect(redactText('x=s3cr3t-Pa55;', [DB])).toBe('x=[redacted:db-prod];');
  });
});
