export interface CpuFacts {
  cpu_family: string;
  cpu_model: string;
  cpu_model_name: string;
  cpu_vendor: string;
}

/** ARM "CPU implementer" codes of common vendors. */
const ARM_IMPLEMENTERS: Record<string, string> = {
  '0x41': 'ARM',
  '0x42': 'Broadcom',
  '0x43': 'Cavium',
  '0x46': 'Fujitsu',
  '0x48': 'HiSilicon',
  '0x4e': 'NVIDIA',
  '0x51': 'Qualcomm',
  '0x61': 'Apple',
  '0xc0': 'Ampere',
};

/** The `key : value` pairs of the first processor block of /proc/cpuinfo, plus machine-wide keys. */
function cpuinfoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    if (key !== '' && !fields.has(key)) fields.set(key, line.slice(colon + 1).trim());
  }
  return fields;
}

/** CPU facts from /proc/cpuinfo (x86 and ARM layouts); `fallbackModelName` fills gaps (os.cpus()[0].model). */
export function parseCpuInfo(text: string, fallbackModelName = ''): CpuFacts {
  const f = cpuinfoFields(text);
  const implementer = f.get('CPU implementer')?.toLowerCase();
  return {
    cpu_family: f.get('cpu family') ?? f.get('CPU architecture') ?? '',
    cpu_model: f.get('model') ?? f.get('CPU part') ?? '',
    cpu_model_name: f.get('model name') ?? f.get('Model') ?? f.get('cpu model') ?? fallbackModelName,
    cpu_vendor:
      f.get('vendor_id') ??
      (implementer ? (ARM_IMPLEMENTERS[implementer] ?? implementer) : undefined) ??
      vendorFromModelName(fallbackModelName),
  };
}

/** A vendor guessed from a model name, for platforms where Node only gives the name. */
export function vendorFromModelName(modelName: string): string {
  if (/intel/i.test(modelName)) return 'GenuineIntel';
  if (/\bamd\b/i.test(modelName)) return 'AuthenticAMD';
  if (/apple/i.test(modelName)) return 'Apple';
  return '';
}
