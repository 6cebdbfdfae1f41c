import { describe, expect, test } from 'vitest';
import { groupNameSchema, nameProblem, usernameProblem, usernameSchema } from '@svc/protocol';

describe('user and group names', () => {
  test('are returned in NFC', () => {
    expect(usernameSchema.parse('Zoe\u0308')).toBe('Zoë');
    expect(groupNameSchema.parse('A\u030angstrom')).toBe('Ångstrom');
  });

  test('refuse control, bidirectional-control and lone-surrogate characters', () => {
    const cases: [string, RegExp][] = [
      ['a\u0000b', /control characters/],
      ['a\u007fb', /control characters/],
      ['a\u009bb', /control characters/], // C1
      ['a\u061cb', /bidirectional/],
      ['a\u200fb', /bidirectional/],
      ['a\u202ab', /bidirectional/],
      ['a\u202eb', /bidirectional/],
      ['a\u2066b', /bidirectional/],
      ['a\u2069b', /bidirectional/],
      ['a\ud800b', /lone surrogate/],
      ['a\udfffb', /lone surrogate/],
    ];
    for (const [name, message] of cases) {
      expect(nameProblem(name), JSON.stringify(name)).toMatch(message);
      expect(usernameSchema.safeParse(name).success, JSON.stringify(name)).toBe(false);
      expect(groupNameSchema.safeParse(name).success, JSON.stringify(name)).toBe(false);
    }
  });

  test('keep the length, blank and colon rules; count characters, not UTF-16 units', () => {
    expect(nameProblem('')).toMatch(/empty/);
    expect(nameProblem(' x')).toMatch(/blanks/);
    expect(nameProblem('x\u3000')).toMatch(/blanks/);
    expect(nameProblem('x'.repeat(151))).toMatch(/150/);
    expect(nameProblem('😀'.repeat(150))).toBeUndefined();
    expect(usernameProblem('a:b')).toMatch(/colon/);
    expect(nameProblem('a:b')).toBeUndefined(); // groups may hold a colon
    for (const fine of ['admin', 'Zoë', '用户', 'family 👨‍👩‍👧', 'a.b-c_d@e']) {
      expect(usernameProblem(fine), fine).toBeUndefined();
    }
  });
});
