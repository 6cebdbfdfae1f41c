import { describe, expect, test } from 'vitest';
import { findLookAlike, lookAlikeKey, lookupForms } from '../../src/core/users/username.js';

describe('look-alike user names', () => {
  test('fold case, compatibility forms and invisible characters', () => {
    const same: [string, string][] = [
      ['admin', 'ADMIN'],
      ['admin', 'ａｄｍｉｎ'],
      ['file', 'ﬁle'],
      ['ix', 'Ⅸ'],
      ['straße', 'STRASSE'],
      ['οδος', 'ΟΔΟΣ'],
      ['admin', 'adm\u00adin'], // soft hyphen
      ['admin', 'ad\u200bmin'], // zero-width space
      ['admin', 'admın'], // dotless i
      ['Zoë', 'ZOE\u0308'],
    ];
    for (const [a, b] of same) expect(lookAlikeKey(a), `${a} / ${b}`).toBe(lookAlikeKey(b));
    const different: [string, string][] = [
      ['admin', 'admin2'],
      ['admin', 'аdmin'], // Cyrillic а: other scripts are not folded
      ['zoe', 'zoë'],
    ];
    for (const [a, b] of different) expect(lookAlikeKey(a), `${a} / ${b}`).not.toBe(lookAlikeKey(b));
  });

  test('an exact match wins over a look-alike', () => {
    expect(findLookAlike(['ADMIN', 'admin'], 'admin')).toBe('admin');
    expect(findLookAlike(['ADMIN', 'bob'], 'Admin')).toBe('ADMIN');
    expect(findLookAlike(['bob'], 'alice')).toBeUndefined();
  });

  test('lookups try the name as given, then its NFC form', () => {
    expect(lookupForms('Zoë')).toEqual(['Zoë']);
    expect(lookupForms('Zoe\u0308')).toEqual(['Zoe\u0308', 'Zoë']);
  });
});
