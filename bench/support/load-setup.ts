/** What both load benchmarks start with: a fresh svcd with a logged-in API client, and a simulator fleet for it. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient, type StatusData } from './api-client.js';
import { onCleanUp } from './bench-runner.js';
import type { loadSettings } from './load-settings.js';
import { loadAverage, progress } from './report.js';
import { SimulatorFleet } from './simulator-fleet.js';
import { API_USER, CLIENT_AUTH, SvcdProcess } from './svcd-process.js';

type Settings = ReturnType<typeof loadSettings>;

export interface LoadSetup {
  svcd: SvcdProcess;
  api: ApiClient;
  loadBefore: string;
  /** A fleet of `settings.clients` simulated agents for this svcd, not started yet; stopped at clean-up. */
  newFleet: () => SimulatorFleet;
}

/** Starts svcd in a temporary folder (removed at clean-up) and logs in with `apiConnections` keep-alive sockets. */
export async function startLoadSetup(
  name: string,
  settings: Settings,
  apiConnections: number,
  options: { metrics?: boolean } = {},
): Promise<LoadSetup> {
  const loadBefore = loadAverage();
  const workDir = await mkdtemp(join(tmpdir(), `svc-${name}-bench-`));
  onCleanUp(() => rm(workDir, { recursive: true, force: true }));
  const svcd = new SvcdProcess({
    workDir,
    maxHandshakes: settings.maxHandshakes,
    nodeArgs: settings.svcdNodeArgs,
    ...(settings.auditOff ? { sections: ['[audit]', 'enabled = false'] } : {}),
    ...options,
  });
  onCleanUp(() => svcd.stop());
  progress(
    `${settings.clients} clients in ${settings.workers} simulator processes; load average ${loadBefore}`,
  );
  await svcd.start();
  const api = new ApiClient(svcd.apiBase, apiConnections);
  onCleanUp(() => api.close());
  await api.login(API_USER.name, API_USER.password);
  const fingerprint = (await api.getJson<StatusData>('/status')).data.fingerprint;
  const newFleet = () => {
    const fleet = new SimulatorFleet({
      url: svcd.agentUrl,
      authId: CLIENT_AUTH.id,
      password: CLIENT_AUTH.password,
      fingerprint,
      clients: settings.clients,
      workers: settings.workers,
      startConcurrency: settings.connectConcurrency,
    });
    onCleanUp(() => fleet.stop());
    return fleet;
  };
  return { svcd, api, loadBefore, newFleet };
}

/** Polls /status (every 250 ms, at most 60 s) until svcd lists `count` connected clients. */
export async function waitListed(api: ApiClient, count: number): Promise<StatusData> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = (await api.getJson<StatusData>('/status')).data;
    if (status.clients_connected === count) return status;
    if (Date.now() > deadline)
      throw new Error(`svcd lists ${status.clients_connected} connected clients, expected ${count}`);
    await sleep(250);
  }
}
