/**
 * The bench simulator's source addresses (bench/support/load-simulator.ts `localAddresses`, used by the idle
 * cluster bench to get past one address's ~28,000 ephemeral ports): simulated agents connect to a real svcd from
 * the 127.x addresses given, in turn, as the kernel's socket table shows; and the BENCH_SOURCE_ADDRESSES list and
 * port arithmetic (bench/support/source-addresses.ts).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LoadSimulator } from '../bench/support/load-simulator.js';
import {
  checkBindable,
  parseSourceAddresses,
  sourcePortShortage,
} from '../bench/support/source-addresses.js';
import { startE2eSvcdOnFreePorts } from '../test-support/e2e-setup.js';
import type { RunningProcess } from '../test-support/process.js';

const AGENT_AUTH = { id: 'sim', password: 'sim-password-1' };
const SOURCES = ['127.0.0.2', '127.0.0.3'];
const AGENTS = 6;

describe('BENCH_SOURCE_ADDRESSES', () => {
  test('addresses and ranges, comma-separated; empty or none: the system chooses', () => {
    expect(parseSourceAddresses('127.0.0.2-127.0.0.5')).toEqual([
      '127.0.0.2',
      '127.0.0.3',
      '127.0.0.4',
      '127.0.0.5',
    ]);
    expect(parseSourceAddresses(' 127.0.0.9, 127.0.0.255-127.0.1.1 ')).toEqual([
      '127.0.0.9',
      '127.0.0.255',
      '127.0.1.0',
      '127.0.1.1',
    ]);
    expect(parseSourceAddresses('')).toEqual([]);
    expect(parseSourceAddresses('none')).toEqual([]);
  });

  test('anything else is refused with the entry named', () => {
    expect(() => parseSourceAddresses('127.0.0.300')).toThrow('"127.0.0.300" is not an IPv4 address');
    expect(() => parseSourceAddresses('127.0.0.5-127.0.0.2')).toThrow('ends before it starts');
    expect(() => parseSourceAddresses('127.0.0.2,127.0.0.2')).toThrow('names an address twice');
    expect(() => parseSourceAddresses('127.0.0.0-127.0.3.255')).toThrow('more than 256');
    expect(() => parseSourceAddresses('::1')).toThrow('is not an IPv4 address');
  });

  test('each source address has its own ephemeral ports; without a list each listener has them', () => {
    // 28,232 ports, 95 % of them usable: 26,820 per address.
    expect(sourcePortShortage(['127.0.0.2', '127.0.0.3'], 50_000, 25_000, 28_232)).toBeUndefined();
    expect(sourcePortShortage(['127.0.0.2'], 50_000, 25_000, 28_232)).toMatch(
      /50000 agents from 1 source addresses are 50000 per address.*at least 2 addresses/,
    );
    expect(sourcePortShortage([], 50_000, 25_000, 28_232)).toBeUndefined();
    expect(sourcePortShortage([], 60_000, 30_000, 28_232)).toMatch(/set BENCH_SOURCE_ADDRESSES/);
  });

  test('an address that is not local is refused before the bench starts', async () => {
    await expect(checkBindable(['127.0.0.7'])).resolves.toBeUndefined();
    await expect(checkBindable(['192.0.2.1'])).rejects.toThrow('cannot use 192.0.2.1 as a source address');
  });
});

/** Established connections to `port` in the kernel's table, counted by their local (source) IPv4 address. */
function connectionsTo(port: number): Record<string, number> {
  const out: Record<string, number> = {};
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const [, local, remote, state] = line.trim().split(/\s+/);
    if (!local || !remote || state !== '01' || !remote.endsWith(`:${hexPort}`)) continue;
    const hex = local.split(':')[0] ?? '';
    // Little-endian: 0200007F is 127.0.0.2.
    const ip = [6, 4, 2, 0].map((i) => parseInt(hex.slice(i, i + 2), 16)).join('.');
    out[ip] = (out[ip] ?? 0) + 1;
  }
  return out;
}

describe.runIf(process.platform === 'linux')('simulated agents from several 127.x addresses', () => {
  let dir: string;
  let svcd: RunningProcess;
  let url: string;
  let port: number;
  let fingerprint: string;
  let simulator: LoadSimulator | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-sim-sources-'));
    const started = await startE2eSvcdOnFreePorts(dir, {
      keySeed: 'simulator-sources-seed',
      server: [`auth = "${AGENT_AUTH.id}:${AGENT_AUTH.password}"`],
    });
    svcd = started.svcd;
    port = started.clientPort;
    url = `ws://127.0.0.1:${port}`;
    fingerprint = started.fingerprint;
  });

  afterAll(async () => {
    await simulator?.stop();
    await svcd?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('agent n connects from address n mod their count, and the simulator counts them by URL', async () => {
    simulator = new LoadSimulator({
      url,
      localAddresses: SOURCES,
      authId: AGENT_AUTH.id,
      password: AGENT_AUTH.password,
      fingerprint,
      idPrefix: 'sources-',
      count: AGENTS,
      startConcurrency: AGENTS,
    });
    void simulator.start();
    await expect.poll(() => simulator?.snapshot().connected, { timeout: 30_000 }).toBe(AGENTS);
    expect(simulator.snapshot().connectedByUrl).toEqual({ [url]: AGENTS });
    expect(connectionsTo(port)).toEqual({ '127.0.0.2': AGENTS / 2, '127.0.0.3': AGENTS / 2 });
  });
});
