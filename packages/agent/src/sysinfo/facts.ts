import os from 'node:os';
import type { SystemFacts } from '@svc/protocol';
import { parseCpuInfo, vendorFromModelName, type CpuFacts } from './cpu.js';
import { externalAddresses } from './network.js';
import { linuxIdentity, parseMacSystemVersion, parseOsRelease, type OsIdentity } from './os-release.js';
import { readText } from './read-text.js';
import { describeTimezone } from './timezone.js';
import { detectVirtualization } from './virtualization.js';

/** Node's arch names → the names Go uses (and the reference system reports). */
const GO_ARCH: Record<string, string> = { x64: 'amd64', ia32: '386', mipsel: 'mipsle' };

/** Node's platform names → the kernel family Go's GOOS reports (`os_kernel` of the reference agent). */
const GO_OS: Partial<Record<NodeJS.Platform, string>> = { win32: 'windows', sunos: 'solaris' };

export function kernelFamily(platform: NodeJS.Platform): string {
  return GO_OS[platform] ?? platform;
}

function goArch(): string {
  const arch = os.arch();
  if (arch === 'ppc64' && os.endianness() === 'LE') return 'ppc64le';
  return GO_ARCH[arch] ?? arch;
}

async function osIdentity(platform: NodeJS.Platform): Promise<OsIdentity> {
  if (platform === 'linux') {
    const text = (await readText('/etc/os-release')) || (await readText('/usr/lib/os-release'));
    return linuxIdentity(parseOsRelease(text));
  }
  if (platform === 'darwin') {
    const mac = parseMacSystemVersion(await readText('/System/Library/CoreServices/SystemVersion.plist'));
    const version = mac.version || os.release();
    return { os_family: 'darwin', os_full_name: `${mac.name || 'macOS'} ${version}`, os_version: version };
  }
  if (platform === 'win32') {
    return { os_family: 'windows', os_full_name: os.version(), os_version: os.release() };
  }
  return { os_family: platform, os_full_name: `${os.type()} ${os.release()}`, os_version: os.release() };
}

function cpuFacts(cpuinfo: string): CpuFacts {
  const modelName = os.cpus()[0]?.model.trim() ?? '';
  if (cpuinfo) return parseCpuInfo(cpuinfo, modelName);
  return {
    cpu_family: '',
    cpu_model: '',
    cpu_model_name: modelName,
    cpu_vendor: vendorFromModelName(modelName),
  };
}

/** The host's facts as the hello message carries them; missing sources give empty values, never an error. */
export async function collectFacts(): Promise<SystemFacts> {
  const platform = os.platform();
  const hostname = os.hostname();
  const cpuinfo = platform === 'linux' ? await readText('/proc/cpuinfo') : '';
  const [identity, virt] = await Promise.all([osIdentity(platform), detectVirtualization(platform, cpuinfo)]);
  return {
    // Like `uname -a`: kernel name, host name, release, build, machine.
    os: [os.type(), hostname, os.release(), os.version(), os.machine()].filter(Boolean).join(' '),
    os_arch: goArch(),
    ...identity,
    os_kernel: kernelFamily(platform),
    os_virtualization_system: virt.system,
    os_virtualization_role: virt.role,
    ...cpuFacts(cpuinfo),
    num_cpus: os.cpus().length || os.availableParallelism(),
    mem_total: os.totalmem(),
    timezone: describeTimezone(),
    hostname,
    ...externalAddresses(os.networkInterfaces()),
  };
}
