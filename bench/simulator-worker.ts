/**
 * Child process of the load benchmarks: holds N simulated svc agents (bench/support/load-simulator.ts) and prints
 * their counts as JSON lines on stdout: `{"type":"stats","worker":0,"connected":..,...}` every 250 ms while
 * something changes, at least every 2 s. SIGUSR2 sets the mark (see LoadSimulator.mark). A line
 * `{"type":"ping-round","round":n,"startAt":ms}` on stdin runs one ping round (LoadSimulator.pingRound) at the wall
 * clock time startAt and answers `{"type":"ping-round","worker":w,"round":n,"sent":..,"replied":..,"failed":..,
 * "finishedAt":ms}` on stdout. A line `{"type":"drop","count":n}` cuts the links of n connected clients (churn). Stops on SIGTERM/SIGINT, or by itself when its parent is gone.
 *
 *   node --import tsx bench/simulator-worker.ts '{"worker":0,"url":"ws://127.0.0.1:8080","authId":"..",
 *     "password":"..","fingerprint":"..","idPrefix":"sim-0-","count":2500,"startConcurrency":8}'
 *
 * With `"fallbackUrls":["ws://127.0.0.1:8081",...]` (other nodes of a cluster) an agent whose link is lost goes on
 * to those (LoadSimulator's fallbackUrls); with `"localAddresses":["127.0.0.2","127.0.0.3"]` agent n connects from
 * address n mod their count (LoadSimulator's localAddresses).
 */
import { createInterface } from 'node:readline';
import { LoadSimulator, type SimulatorOptions } from './support/load-simulator.js';

interface WorkerConfig extends SimulatorOptions {
  worker: number;
}

const REPORT_MS = 250;
const PING_ROUND_TIMEOUT_MS = 60_000;
const HEARTBEAT_MS = 2_000;

function parseConfig(text: string | undefined): WorkerConfig {
  const config = JSON.parse(text ?? '') as Partial<WorkerConfig>;
  for (const key of ['url', 'authId', 'password', 'fingerprint', 'idPrefix'] as const)
    if (typeof config[key] !== 'string') throw new Error(`config.${key} must be a string`);
  for (const key of ['worker', 'count', 'startConcurrency'] as const)
    if (!Number.isInteger(config[key])) throw new Error(`config.${key} must be a whole number`);
  for (const key of ['fallbackUrls', 'localAddresses'] as const) {
    const list = config[key];
    if (list !== undefined && !(Array.isArray(list) && list.every((u) => typeof u === 'string')))
      throw new Error(`config.${key} must be a list of strings`);
  }
  return config as WorkerConfig;
}

const config = parseConfig(process.argv[2]);
// BENCH_JOB_RESULTS=channel: results on output channels only, as agents before the `job.result` request.
if (process.env['BENCH_JOB_RESULTS'] === 'channel') config.resultsOnChannel = true;
const simulator = new LoadSimulator(config);
const parent = process.ppid;

let lastStats = '';
let lastWrite = 0;
function report(force = false): void {
  const stats = { type: 'stats', worker: config.worker, ...simulator.snapshot() };
  const text = JSON.stringify(stats);
  const now = Date.now();
  if (!force && text === lastStats && now - lastWrite < HEARTBEAT_MS) return;
  lastStats = text;
  lastWrite = now;
  const rssKiB = Math.round(process.memoryUsage.rss() / 1024);
  process.stdout.write(`${JSON.stringify({ ...stats, rssKiB })}\n`);
}

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(ticker);
  await simulator.stop();
  report(true);
  process.exit(0);
}

const ticker = setInterval(() => {
  // Reparented: the bench died without stopping us.
  if (process.ppid !== parent) void stop();
  else report();
}, REPORT_MS);
process.stdout.on('error', () => void stop());
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
process.on('SIGUSR2', () => {
  simulator.mark();
  report(true);
});

/** Runs a ping round at the common start time the bench chose, so that every worker starts together. */
async function pingRound(round: number, startAt: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
  const result = await simulator.pingRound(PING_ROUND_TIMEOUT_MS);
  process.stdout.write(
    `${JSON.stringify({ type: 'ping-round', worker: config.worker, round, ...result })}\n`,
  );
}

if (process.stdin.readable)
  createInterface({ input: process.stdin }).on('line', (line) => {
    const command = JSON.parse(line) as { type?: string; round?: number; startAt?: number; count?: number };
    if (command.type === 'ping-round' && Number.isInteger(command.round) && Number.isFinite(command.startAt))
      void pingRound(command.round as number, command.startAt as number);
    if (command.type === 'drop' && Number.isInteger(command.count))
      simulator.dropLinks(command.count as number);
  });

report(true);
await simulator.start();
