import { describe, expect, it } from 'vitest';
import { CommandRestriction, compileCommandRule } from '../../../src/core/access/command-restriction.js';
import { validateGroupPolicy } from '../../../src/core/access/group-policies.js';
import { compileRestrictionPattern } from '../../../src/core/access/restriction-pattern.js';
import { TunnelRestriction, compileTunnelRule } from '../../../src/core/access/tunnel-restriction.js';
import { parseAcl } from '../../../src/core/tunnels/acl.js';

const commands = (...rules: [string, { allow?: string[]; deny?: string[] }][]) =>
  new CommandRestriction(rules.map(([group, r]) => compileCommandRule(group, r)));

const refusal = (fn: () => void): { code: string; message: string } | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return { code: (err as { code: string }).code, message: (err as Error).message };
  }
};

describe('restriction patterns', () => {
  it('accepts the usual command filters', () => {
    for (const source of [
      '^/usr/bin/.*',
      '^systemctl (start|stop|restart) [a-z0-9@.-]+$',
      '(\\||<|>|;|,|\\n|&)',
      '^C:\\\\Windows\\\\System32\\\\.*',
      'rm\\s+-rf',
      '^(?:ls|df)( -[a-z]+)?$',
    ])
      expect(() => compileRestrictionPattern(source), source).not.toThrow();
  });

  it('refuses invalid regular expressions and shapes with unbounded backtracking', () => {
    expect(() => compileRestrictionPattern('(unclosed')).toThrow(/not a valid regular expression/);
    expect(() => compileRestrictionPattern('(a+)+$')).toThrow(/repeated group/);
    expect(() => compileRestrictionPattern('(a|aa)*b')).toThrow(/repeated group/);
    expect(() => compileRestrictionPattern('(?:x{2,})+')).toThrow(/repeated group/);
    expect(() => compileRestrictionPattern('(a)\\1')).toThrow(/back-references/);
    expect(() => compileRestrictionPattern('.*.*.*.*x')).toThrow(/at most 3 repetitions/);
    expect(() => compileRestrictionPattern('a{1,50}b{1,50}c{1,50}d{2}e+')).toThrow(/at most 3 repetitions/);
  });

  it('a match that overruns its time budget refuses the command (fails closed)', () => {
    // Accepted by shape, but cubic on a long run of blanks with no x.
    const r = commands(['ops', { deny: ['\\s*.*x'] }]);
    const started = performance.now();
    expect(refusal(() => r.assertCommand(' '.repeat(4096)))?.message).toMatch(/took too long/);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(refusal(() => r.assertCommand('ls x'))?.message).toMatch(/deny rule/);
    expect(refusal(() => r.assertCommand('ls'))).toBeUndefined();
  });
});

describe('commands_restricted', () => {
  it('without rules everything is allowed', () => {
    expect(refusal(() => commands().assertCommand('rm -rf /'))).toBeUndefined();
    expect(refusal(() => commands(['ops', {}]).assertScript('rm -rf /'))).toBeUndefined();
  });

  it('allow: a command must match one pattern; deny wins over allow', () => {
    const r = commands(['ops', { allow: ['^systemctl ', '^df'], deny: ['\\bsshd\\b', ';'] }]);
    expect(refusal(() => r.assertCommand('systemctl restart nginx'))).toBeUndefined();
    expect(refusal(() => r.assertCommand('df -h'))).toBeUndefined();
    expect(refusal(() => r.assertCommand('cat /etc/shadow'))).toEqual({
      code: 'ERR_COMMAND_RESTRICTED',
      message: 'Command refused: it matches no allow rule of your user groups',
    });
    expect(refusal(() => r.assertCommand('systemctl stop sshd'))).toEqual({
      code: 'ERR_COMMAND_RESTRICTED',
      message: `Command refused by user group 'ops': the command matches deny rule "\\\\bsshd\\\\b"`,
    });
    expect(refusal(() => r.assertCommand('df; reboot'))?.message).toMatch(/deny rule ";"/);
  });

  it('across groups: one group allowing is enough, any group denying refuses', () => {
    const r = commands(['ops', { allow: ['^df'] }], ['web', { allow: ['^nginx -t$'], deny: ['-h'] }]);
    expect(refusal(() => r.assertCommand('nginx -t'))).toBeUndefined();
    expect(refusal(() => r.assertCommand('df'))).toBeUndefined();
    expect(refusal(() => r.assertCommand('df -h'))?.message).toMatch(/user group 'web'.*deny rule "-h"/);
    // A group without an allow list allows any command, but its deny list still applies.
    const open = commands(['ops', { allow: ['^df'] }], ['all', { deny: ['reboot'] }]);
    expect(refusal(() => open.assertCommand('uptime'))).toBeUndefined();
    expect(refusal(() => open.assertCommand('reboot'))?.code).toBe('ERR_COMMAND_RESTRICTED');
  });

  it('scripts: refused under allow lists; each line checked against deny rules', () => {
    expect(refusal(() => commands(['ops', { allow: ['^df'] }]).assertScript('df\n'))?.message).toMatch(
      /Script refused/,
    );
    const r = commands(['ops', { deny: ['^shutdown'] }]);
    expect(refusal(() => r.assertScript('uptime\ndf -h\n'))).toBeUndefined();
    expect(refusal(() => r.assertScript('uptime\r\nshutdown -h now\n'))?.message).toMatch(
      /the script line matches deny rule "\^shutdown"/,
    );
    expect(refusal(() => r.assertScript('x'.repeat(5000)))?.message).toMatch(/too long to check/);
  });
});

describe('tunnels_restricted', () => {
  const tunnels = (...rules: [string, Parameters<typeof compileTunnelRule>[1]][]) =>
    new TunnelRestriction(rules.map(([group, r]) => compileTunnelRule(group, r)));
  const tunnel = (scheme: string | null, remotePort: number, acl?: string) => ({
    scheme,
    remotePort,
    acl: acl === undefined ? undefined : parseAcl(acl),
  });

  it('allow: scheme, remote port (ranges) and acl must all be covered by one group', () => {
    const r = tunnels(
      ['ops', { allow: { scheme: ['ssh'], remote: [22, '2200-2210'], acl: ['10.0.0.0/8'] } }],
      ['rdp', { allow: { scheme: ['RDP'], remote: [3389] } }],
    );
    expect(refusal(() => r.assertTunnel(tunnel('ssh', 22, '10.1.2.3,10.9.0.0/16')))).toBeUndefined();
    expect(refusal(() => r.assertTunnel(tunnel('SSH', 2205, '10.1.2.3')))).toBeUndefined();
    expect(refusal(() => r.assertTunnel(tunnel('rdp', 3389)))).toBeUndefined();
    const mixed = refusal(() => r.assertTunnel(tunnel('ssh', 3389, '10.0.0.1')));
    expect(mixed?.code).toBe('ERR_TUNNEL_RESTRICTED');
    expect(mixed?.message).toMatch(/no allow rule of your user groups covers it/);
    expect(refusal(() => r.assertTunnel(tunnel('ssh', 22)))?.code).toBe('ERR_TUNNEL_RESTRICTED');
    expect(refusal(() => r.assertTunnel(tunnel('ssh', 22, '10.0.0.0/7')))?.code).toBe(
      'ERR_TUNNEL_RESTRICTED',
    );
    expect(refusal(() => r.assertTunnel(tunnel(null, 22, '10.0.0.1')))?.code).toBe('ERR_TUNNEL_RESTRICTED');
  });

  it('deny wins over allow, in any group', () => {
    const r = tunnels(
      ['ops', { allow: { remote: ['1-65535'] }, deny: { remote: ['2375-2376'], acl: ['192.0.2.0/24'] } }],
      ['all', {}],
    );
    expect(refusal(() => r.assertTunnel(tunnel('ssh', 22, '198.51.100.1')))).toBeUndefined();
    expect(refusal(() => r.assertTunnel(tunnel(null, 2375, '198.51.100.1')))?.message).toBe(
      `Tunnel refused by user group 'ops': tunnels_restricted.deny.remote "2375-2376"`,
    );
    expect(refusal(() => r.assertTunnel(tunnel('ssh', 22, '192.0.2.0/25')))?.message).toMatch(
      /deny\.acl "192\.0\.2\.0\/24"/,
    );
    // No acl admits everyone, so a denied network is reached.
    expect(refusal(() => r.assertTunnel(tunnel('ssh', 22)))?.message).toMatch(/the tunnel has no acl/);
    const schemes = tunnels(['ops', { deny: { scheme: ['vnc'] } }]);
    expect(refusal(() => schemes.assertTunnel(tunnel('VNC', 5900)))?.message).toMatch(/deny\.scheme "vnc"/);
  });
});

describe('validation at save', () => {
  it('names the field and the problem', () => {
    const detail = (raw: unknown) => {
      try {
        validateGroupPolicy('ops', raw);
        return undefined;
      } catch (err) {
        return `${(err as { code: string }).code}: ${(err as { detail: string }).detail}`;
      }
    };
    expect(detail({ commands_restricted: { allow: ['(a+)+'] } })).toMatch(
      /^ERR_INVALID_GROUP_POLICY: commands_restricted: "\(a\+\)\+": a repeated group/,
    );
    expect(detail({ commands_restricted: { allow: ['['] } })).toMatch(/not a valid regular expression/);
    expect(detail({ commands_restricted: { permit: [] } })).toMatch(
      /^ERR_INVALID_GROUP_POLICY: commands_restricted/,
    );
    expect(detail({ tunnels_restricted: { deny: { remote: ['90-80'] } } })).toMatch(/remote "90-80"/);
    expect(detail({ tunnels_restricted: { allow: { acl: ['10.0.0.0/33'] } } })).toMatch(/acl "10.0.0.0\/33"/);
    expect(detail({ client_groups: ['bad id'] })).toMatch(/^ERR_INVALID_GROUP_POLICY: client_groups.0/);
    expect(
      validateGroupPolicy('ops', {
        client_groups: ['web'],
        commands_restricted: { allow: ['^df'] },
        tunnels_restricted: { allow: { scheme: ['ssh'] } },
      }),
    ).toEqual({
      clientGroups: ['web'],
      commandsRestricted: { allow: ['^df'] },
      tunnelsRestricted: { allow: { scheme: ['ssh'] } },
    });
  });
});
