import { execFile } from 'node:child_process';
import { readText } from './read-text.js';
import { pathExists } from '@svc/platform';

export interface Virtualization {
  /** e.g. `kvm`, `vmware`, `docker`, `lxc`; systemd-detect-virt's names. Empty when unknown or none. */
  system: string;
  /** `guest`, `host`, or empty when unknown or none. */
  role: string;
}

const NONE: Virtualization = { system: '', role: '' };

/** DMI vendor/product text → systemd-detect-virt name. */
const DMI_VENDORS: [RegExp, string][] = [
  [/qemu|kvm/i, 'kvm'],
  [/vmware/i, 'vmware'],
  [/virtualbox|innotek/i, 'oracle'],
  [/microsoft corporation.*virtual machine|hyper-v/i, 'microsoft'],
  [/xen/i, 'xen'],
  [/amazon ec2/i, 'amazon'],
  [/google compute engine/i, 'google'],
  [/parallels/i, 'parallels'],
  [/bochs/i, 'bochs'],
];

/** Container runtimes named in /proc/1/cgroup. */
const CGROUP_CONTAINERS: [RegExp, string][] = [
  [/\/(docker|moby)[/-]/, 'docker'],
  [/\/kubepods/, 'kubernetes'],
  [/\/lxc[/.]/, 'lxc'],
  [/libpod/, 'podman'],
];

/** Runs systemd-detect-virt; undefined when it is not installed or failed in an unexpected way. */
function systemdDetectVirt(): Promise<Virtualization | undefined> {
  return new Promise((resolve) => {
    execFile('systemd-detect-virt', { timeout: 3000 }, (err, stdout) => {
      const name = stdout.trim();
      // It prints `none` and exits 1 on bare metal.
      if (name === 'none') return resolve(NONE);
      if (err || name === '') return resolve(undefined);
      resolve({ system: name, role: 'guest' });
    });
  });
}

export function vmFromDmi(dmiText: string): string {
  return DMI_VENDORS.find(([pattern]) => pattern.test(dmiText))?.[1] ?? '';
}

export function containerFromCgroup(cgroupText: string): string {
  return CGROUP_CONTAINERS.find(([pattern]) => pattern.test(cgroupText))?.[1] ?? '';
}

/** Without systemd-detect-virt: container marker files, cgroups, the cpuinfo hypervisor flag and DMI strings. */
async function detectFromFiles(cpuinfo: string): Promise<Virtualization> {
  if (await pathExists('/.dockerenv')) return { system: 'docker', role: 'guest' };
  if (await pathExists('/run/.containerenv')) return { system: 'podman', role: 'guest' };
  const container = containerFromCgroup(await readText('/proc/1/cgroup'));
  if (container) return { system: container, role: 'guest' };
  const dmi = await Promise.all(
    ['sys_vendor', 'product_name', 'bios_vendor'].map((file) => readText(`/sys/class/dmi/id/${file}`)),
  );
  const vm = vmFromDmi(dmi.join(' '));
  const hypervisorFlag = /^flags\s*:.*\bhypervisor\b/m.test(cpuinfo);
  if (vm || hypervisorFlag) return { system: vm, role: 'guest' };
  if (await pathExists('/dev/kvm')) return { system: 'kvm', role: 'host' };
  return NONE;
}

/** Linux virtualization facts; other platforms report none. */
export async function detectVirtualization(
  platform: NodeJS.Platform,
  cpuinfo: string,
): Promise<Virtualization> {
  if (platform !== 'linux') return NONE;
  return (await systemdDetectVirt()) ?? (await detectFromFiles(cpuinfo));
}
