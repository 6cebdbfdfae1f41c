import os from 'node:os';
import { describe, expect, test } from 'vitest';
import * as z from 'zod/mini';
import { systemFactsSchema } from '@svc/protocol';
import { parseCpuInfo, vendorFromModelName } from '../src/sysinfo/cpu.js';
import { collectFacts, kernelFamily } from '../src/sysinfo/facts.js';
import { externalAddresses } from '../src/sysinfo/network.js';
import { linuxIdentity, parseMacSystemVersion, parseOsRelease } from '../src/sysinfo/os-release.js';
import { describeTimezone, localZoneName } from '../src/sysinfo/timezone.js';
import { containerFromCgroup, vmFromDmi } from '../src/sysinfo/virtualization.js';

describe('collectFacts on this host', () => {
  test('fills every field of the schema with real values', async () => {
    const facts = await collectFacts();
    expect(z.strictObject(systemFactsSchema.shape).parse(facts)).toEqual(facts);
    expect(Object.keys(facts).sort()).toEqual(Object.keys(systemFactsSchema.shape).sort());
    expect(facts.hostname).toBe(os.hostname());
    expect(facts.hostname).not.toBe('');
    expect(facts.num_cpus).toBeGreaterThan(0);
    expect(facts.mem_total).toBe(os.totalmem());
    expect(facts.mem_total).toBeGreaterThan(0);
    expect(facts.os).toContain(os.release());
    expect(facts.os_kernel).toBe(os.platform() === 'win32' ? 'windows' : os.platform());
    expect(facts.os).toContain(os.release());
    expect(facts.os_arch).not.toBe('');
    expect(facts.os_family).not.toBe('');
    expect(facts.os_full_name).not.toBe('');
    expect(facts.cpu_model_name).not.toBe('');
    expect(facts.timezone).toMatch(/^\S+ \(UTC[+-]\d\d:\d\d\)$/);
    for (const ip of facts.ipv4) expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    for (const ip of facts.ipv6) expect(ip).toContain(':');
    expect(facts.ipv4).not.toContain('127.0.0.1');
    expect(facts.ipv6).not.toContain('::1');
  });

  test.runIf(process.platform === 'linux')('reads the Linux sources', async () => {
    const facts = await collectFacts();
    expect(facts.os).toMatch(/^Linux /);
    expect(facts.os_version).not.toBe('');
    expect(facts.cpu_vendor).not.toBe('');
    if (os.arch() === 'x64') {
      expect(facts.os_arch).toBe('amd64');
      expect(facts.cpu_family).toMatch(/^\d+$/);
      expect(facts.cpu_model).toMatch(/^\d+$/);
    }
    // Both empty, or a system with a role.
    expect(facts.os_virtualization_role === '').toBe(facts.os_virtualization_system === '');
  });
});

describe('parsers', () => {
  test('kernel family as Go names it', () => {
    expect(kernelFamily('linux')).toBe('linux');
    expect(kernelFamily('win32')).toBe('windows');
    expect(kernelFamily('darwin')).toBe('darwin');
    expect(kernelFamily('freebsd')).toBe('freebsd');
  });

  test('os-release with quoting; family from ID_LIKE', () => {
    const ubuntu = parseOsRelease(
      'NAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\nID_LIKE=debian\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n# comment\n',
    );
    expect(linuxIdentity(ubuntu)).toEqual({
      os_family: 'debian',
      os_full_name: 'Ubuntu 22.04.4 LTS',
      os_version: '22.04',
    });
    const rocky = parseOsRelease(
      `ID="rocky"\nID_LIKE="rhel centos fedora"\nNAME='Rocky Linux'\nVERSION_ID="9.3"`,
    );
    expect(linuxIdentity(rocky)).toEqual({
      os_family: 'rhel',
      os_full_name: 'Rocky Linux 9.3',
      os_version: '9.3',
    });
    expect(parseOsRelease('X="a \\"quoted\\" word"').X).toBe('a "quoted" word');
    expect(linuxIdentity({})).toEqual({ os_family: 'linux', os_full_name: 'Linux', os_version: '' });
    expect(linuxIdentity(parseOsRelease('ID=arch\nBUILD_ID=rolling')).os_version).toBe('rolling');
  });

  test('macOS SystemVersion.plist', () => {
    const plist =
      '<dict><key>ProductName</key>\n<string>macOS</string><key>ProductVersion</key><string>14.4.1</string></dict>';
    expect(parseMacSystemVersion(plist)).toEqual({ name: 'macOS', version: '14.4.1' });
    expect(parseMacSystemVersion('')).toEqual({ name: '', version: '' });
  });

  test('cpuinfo on x86', () => {
    const text =
      'processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 158\n' +
      'model name\t: Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz\n\nprocessor\t: 1\nvendor_id\t: Other\n';
    expect(parseCpuInfo(text)).toEqual({
      cpu_family: '6',
      cpu_model: '158',
      cpu_model_name: 'Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz',
      cpu_vendor: 'GenuineIntel',
    });
  });

  test('cpuinfo on ARM uses implementer, architecture and part', () => {
    const text =
      'processor\t: 0\nBogoMIPS\t: 108.00\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd08\n\n' +
      'Model\t\t: Raspberry Pi 4 Model B Rev 1.4\n';
    expect(parseCpuInfo(text, 'Cortex-A72')).toEqual({
      cpu_family: '8',
      cpu_model: '0xd08',
      cpu_model_name: 'Raspberry Pi 4 Model B Rev 1.4',
      cpu_vendor: 'ARM',
    });
    expect(parseCpuInfo('CPU implementer\t: 0x99\n', 'x').cpu_vendor).toBe('0x99');
    expect(parseCpuInfo('', 'Apple M2').cpu_vendor).toBe('Apple');
  });

  test('vendor from a model name', () => {
    expect(vendorFromModelName('AMD Ryzen 7 5800X')).toBe('AuthenticAMD');
    expect(vendorFromModelName('Intel(R) Xeon(R)')).toBe('GenuineIntel');
    expect(vendorFromModelName('Unknown')).toBe('');
  });

  test('timezone with the offset', () => {
    const date = new Date('2024-01-15T12:00:00Z');
    expect(describeTimezone(date, 'Zone/Name')).toMatch(/^Zone\/Name \(UTC[+-]\d\d:\d\d\)$/);
    if (date.getTimezoneOffset() === 0) expect(describeTimezone(date, 'UTC')).toBe('UTC (UTC+00:00)');
  });

  test('zone name from the /etc/localtime link, TZ and other cases left to Intl', () => {
    const intl = () => 'Intl/Answer';
    const link = (target: string | undefined) => ({ tz: undefined, localtimeLink: () => target, intl });
    expect(localZoneName(link('/usr/share/zoneinfo/Europe/Berlin'))).toBe('Europe/Berlin');
    expect(localZoneName(link('../usr/share/zoneinfo/America/Argentina/Buenos_Aires'))).toBe(
      'America/Argentina/Buenos_Aires',
    );
    expect(localZoneName(link('/var/db/timezone/zoneinfo/Etc/GMT+5'))).toBe('Etc/GMT+5');
    expect(localZoneName(link('/usr/share/zoneinfo/Etc/UTC'))).toBe('UTC');
    expect(localZoneName(link('/usr/share/zoneinfo/Universal'))).toBe('UTC');
    expect(localZoneName(link(undefined))).toBe('Intl/Answer');
    expect(localZoneName(link('/etc/some-other-file'))).toBe('Intl/Answer');
    const neverRead = () => expect.unreachable('the link is not read when TZ is set');
    expect(localZoneName({ tz: 'Asia/Tokyo', localtimeLink: neverRead, intl })).toBe('Intl/Answer');
    expect(localZoneName({ tz: undefined, localtimeLink: () => undefined, intl: () => undefined })).toBe(
      'UTC',
    );
    expect(localZoneName({ tz: undefined, localtimeLink: () => undefined, intl: () => 'Etc/GMT' })).toBe(
      'UTC',
    );
  });

  test.runIf(process.platform === 'linux' && process.env.TZ === undefined)(
    'zone name on this host matches Intl',
    () => {
      const intl = Intl.DateTimeFormat().resolvedOptions().timeZone;
      // Intl renames a few zones to older aliases (Asia/Kolkata → Asia/Calcutta); only the usual ones are compared.
      if (/^(UTC|Europe\/Berlin|America\/New_York|Europe\/London)$/.test(intl))
        expect(localZoneName()).toBe(intl);
      expect(localZoneName()).toMatch(/^[\w+-]+(\/[\w+-]+)*$/);
    },
  );

  test('external addresses skip internal ones and duplicates', () => {
    const base = { netmask: '', mac: '', cidr: null };
    expect(
      externalAddresses({
        lo: [
          { ...base, address: '127.0.0.1', family: 'IPv4', internal: true },
          { ...base, address: '::1', family: 'IPv6', internal: true, scopeid: 0 },
        ],
        eth0: [
          { ...base, address: '192.0.2.2', family: 'IPv4', internal: false },
          { ...base, address: 'fd00::2', family: 'IPv6', internal: false, scopeid: 0 },
        ],
        eth1: [{ ...base, address: '192.0.2.2', family: 'IPv4', internal: false }],
        down: undefined,
      }),
    ).toEqual({ ipv4: ['192.0.2.2'], ipv6: ['fd00::2'] });
  });

  test('virtualization names from DMI strings and cgroups', () => {
    expect(vmFromDmi('QEMU Standard PC (i440FX + PIIX, 1996)')).toBe('kvm');
    expect(vmFromDmi('VMware, Inc. VMware Virtual Platform')).toBe('vmware');
    expect(vmFromDmi('innotek GmbH VirtualBox')).toBe('oracle');
    expect(vmFromDmi('Microsoft Corporation Virtual Machine')).toBe('microsoft');
    expect(vmFromDmi('Dell Inc. PowerEdge R740')).toBe('');
    expect(containerFromCgroup('0::/docker/3f2a1b')).toBe('docker');
    expect(containerFromCgroup('12:pids:/kubepods/burstable/pod1')).toBe('kubernetes');
    expect(containerFromCgroup('0::/')).toBe('');
  });
});
