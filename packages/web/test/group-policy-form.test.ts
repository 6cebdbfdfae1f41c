import { describe, expect, test } from 'vitest';
import { policyBodyOf, policyFormOf, policySummary } from '../src/lib/group-policy-form.js';

describe('the user-group editor’s scope and restrictions', () => {
  test('a stored group becomes the form and back, unchanged', () => {
    const stored = {
      client_groups: ['web', 'db'],
      commands_restricted: { allow: ['^uptime', '^df'], deny: [';'] },
      tunnels_restricted: {
        allow: { scheme: ['ssh'], remote: [22, '8000-8100'] },
        deny: { acl: ['192.0.2.0/24'] },
      },
    };
    const form = policyFormOf(stored);
    expect(form).toEqual({
      scoped: true,
      clientGroups: ['web', 'db'],
      allowCommands: '^uptime\n^df',
      denyCommands: ';',
      tunnelAllow: { scheme: ['ssh'], remote: ['22', '8000-8100'], acl: [] },
      tunnelDeny: { scheme: [], remote: [], acl: ['192.0.2.0/24'] },
    });
    expect(policyBodyOf(form)).toEqual(stored);
  });

  test('blank entries are dropped; empty parts leave their keys out; off means not limited', () => {
    const form = policyFormOf(undefined);
    expect(policyBodyOf(form)).toEqual({
      client_groups: null,
      commands_restricted: {},
      tunnels_restricted: {},
    });
    const body = policyBodyOf({
      ...form,
      scoped: true,
      clientGroups: [' '],
      allowCommands: '\n ^ls  \n\n',
      tunnelDeny: { scheme: [], remote: [' 3389 '], acl: [] },
    });
    expect(body).toEqual({
      client_groups: [],
      commands_restricted: { allow: [' ^ls'] },
      tunnels_restricted: { deny: { remote: [3389] } },
    });
  });

  test('stored values of the wrong shape are shown as nothing rather than breaking the form', () => {
    const form = policyFormOf({
      client_groups: null,
      commands_restricted: { allow: 'uptime', deny: [1, null, 'x'] },
      tunnels_restricted: { allow: [] },
    });
    expect(form.allowCommands).toBe('');
    expect(form.denyCommands).toBe('1\nx');
    expect(form.tunnelAllow).toEqual({ scheme: [], remote: [], acl: [] });
  });

  test('the table line says the scope and which restrictions apply', () => {
    expect(policySummary({ client_groups: null, commands_restricted: {}, tunnels_restricted: {} })).toBe(
      'all clients',
    );
    expect(policySummary({ client_groups: [], commands_restricted: { deny: ['x'] } })).toBe(
      'no client; commands restricted',
    );
    expect(
      policySummary({ client_groups: ['web'], tunnels_restricted: { allow: { scheme: ['ssh'] } } }),
    ).toBe('clients of web; tunnels restricted');
  });
});
