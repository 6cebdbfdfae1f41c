import type { SystemFacts } from '../packages/protocol/src/index.js';

/** Plausible host facts for tests that speak the agent protocol without a real host behind them. */
export const TEST_FACTS: SystemFacts = {
  os: 'Linux test-host 6.1.0-13-amd64 #1 SMP Debian 6.1.55-1 x86_64 GNU/Linux',
  os_arch: 'amd64',
  os_family: 'debian',
  os_kernel: 'linux',
  os_full_name: 'Debian GNU/Linux 12 (bookworm)',
  os_version: '12',
  os_virtualization_system: 'KVM',
  os_virtualization_role: 'guest',
  cpu_family: '25',
  cpu_model: '1',
  cpu_model_name: 'AMD EPYC 7763 64-Core Processor',
  cpu_vendor: 'AuthenticAMD',
  num_cpus: 2,
  mem_total: 4_109_926_400,
  timezone: 'UTC (UTC+00:00)',
  hostname: 'test-host',
  ipv4: ['192.0.2.10'],
  ipv6: ['2001:db8::10'],
};
