/**
 * Prometheus metrics under load (issue 17, item 3): BENCH_CLIENTS simulated svc agents (default 10,000) connect to
 * one real svcd with `[api] metrics_address` set. Reports the latency of GET /metrics (sequential scrapes), and
 * the latency of GET /api/v1/status without scraping, while a scraper polls every BENCH_SCRAPE_INTERVAL_MS (100 ms:
 * 150 times Prometheus's default 15 s, so that a run of /status requests meets some scrapes), and while it scrapes
 * back to back (the worst case).
 *
 *   npm run build && npm run bench:metrics
 *
 * Environment: BENCH_CLIENTS (10000), BENCH_WORKERS (4), BENCH_CONNECT_CONCURRENCY (32), BENCH_CONNECT_TIMEOUT
 * (900 s), BENCH_SCRAPES (300 sequential scrapes), BENCH_SCRAPE_INTERVAL_MS (100), BENCH_REQUESTS (1000 /status requests per phase),
 * BENCH_MAX_HANDSHAKES, BENCH_SVCD_NODE_ARGS, BENCH_STRICT=1 (exit 1 when a target fails).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from './support/api-client.js';
import { runBench, onCleanUp } from './support/bench-runner.js';
import { envNumber } from './support/child-processes.js';
import { loadSettings } from './support/load-settings.js';
import { startLoadSetup, waitListed } from './support/load-setup.js';
import { sequentialLatencies, summarize, type LatencySummary } from './support/latency.js';
import {
  checksTable,
  loadAverage,
  machine,
  progress,
  table,
  writeResult,
  type Check,
} from './support/report.js';

const TARGETS = { maxScrapeP99Ms: 50, maxStatusP99IncreaseMs: 5 };

const SETTINGS = loadSettings(10_000);
const { clients: CLIENTS, workers: WORKERS } = SETTINGS;
const SCRAPES = envNumber('BENCH_SCRAPES', 300, 100_000);
const REQUESTS = envNumber('BENCH_REQUESTS', 1000, 100_000);
const WARMUP = 30;
const SLOW_SCRAPE_INTERVAL_MS = envNumber('BENCH_SCRAPE_INTERVAL_MS', 100, 60_000);

const fmt = (s: LatencySummary) => [s.p50, s.p90, s.p99, s.max].map((v) => v.toFixed(1)).join(' / ') + ' ms';

/** One scrape; throws unless it answered 200. */
async function scrape(scraper: ApiClient): Promise<{ ms: number; body: string }> {
  const answer = await scraper.get('');
  if (answer.status !== 200)
    throw new Error(`GET /metrics: HTTP ${answer.status} ${answer.body.slice(0, 300)}`);
  return { ms: answer.ms, body: answer.body };
}

/** Scrapes every `intervalMs` (0 = back to back) until stopped; resolves with the scrape latencies. */
function scrapeLoop(scraper: ApiClient, intervalMs: number): { stop: () => Promise<number[]> } {
  let running = true;
  const samples: number[] = [];
  const done = (async () => {
    while (running) {
      samples.push((await scrape(scraper)).ms);
      if (intervalMs > 0) await sleep(intervalMs);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
      return samples;
    },
  };
}

/** The value of one sample line of the exposition text. */
function sampleValue(body: string, line: string): number | undefined {
  const found = body.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

async function main(): Promise<boolean> {
  const { svcd, api, loadBefore, newFleet } = await startLoadSetup('metrics', SETTINGS, 1, { metrics: true });
  const scraper = new ApiClient(svcd.metricsUrl, 1);
  onCleanUp(() => scraper.close());

  const fleet = newFleet();
  const connectStart = performance.now();
  fleet.start();
  await fleet.waitAllConnected(SETTINGS.connectTimeoutS * 1000, (s) =>
    progress(
      `${s.connected}/${CLIENTS} connected, ${s.handshaking} handshaking, ${s.backingOff} backing off`,
    ),
  );
  await waitListed(api, CLIENTS);
  progress(`all ${CLIENTS} connected in ${((performance.now() - connectStart) / 1000).toFixed(1)} s`);

  const sample = await scrape(scraper);
  const connected = sampleValue(sample.body, 'svcd_clients{state="connected"}');
  if (connected !== CLIENTS) throw new Error(`the scrape counts ${String(connected)} connected clients`);
  const seriesLines = sample.body.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;

  for (let i = 0; i < WARMUP; i++) await scrape(scraper);
  await sequentialLatencies(api, '/status', WARMUP);

  progress(`${SCRAPES} sequential scrapes`);
  const scrapeSamples: number[] = [];
  for (let i = 0; i < SCRAPES; i++) scrapeSamples.push((await scrape(scraper)).ms);
  const scrapes = summarize(scrapeSamples);

  progress(`${REQUESTS} GET /status without scraping`);
  const quiet = summarize(await sequentialLatencies(api, '/status', REQUESTS));

  progress(`${REQUESTS} GET /status with a scrape every ${SLOW_SCRAPE_INTERVAL_MS} ms`);
  const slowLoop = scrapeLoop(scraper, SLOW_SCRAPE_INTERVAL_MS);
  const withSlow = summarize(await sequentialLatencies(api, '/status', REQUESTS));
  const slowScrapes = await slowLoop.stop();

  progress(`${REQUESTS} GET /status while scraping back to back`);
  const busyLoop = scrapeLoop(scraper, 0);
  const withBusy = summarize(await sequentialLatencies(api, '/status', REQUESTS));
  const busyScrapes = summarize(await busyLoop.stop());

  const held = fleet.stats();
  fleet.check();

  const increase = withSlow.p99 - quiet.p99;
  const checks: Check[] = [
    {
      target: `GET /metrics p99 at ${CLIENTS} clients`,
      value: `${scrapes.p99.toFixed(1)} ms`,
      limit: `<= ${TARGETS.maxScrapeP99Ms} ms`,
      pass: scrapes.p99 <= TARGETS.maxScrapeP99Ms,
    },
    {
      target: `GET /status p99: scraped every ${SLOW_SCRAPE_INTERVAL_MS} ms minus not scraped`,
      value: `${increase.toFixed(1)} ms`,
      limit: `<= ${TARGETS.maxStatusP99IncreaseMs} ms (noise)`,
      pass: increase <= TARGETS.maxStatusP99IncreaseMs,
    },
  ];
  const out = [
    '',
    `Prometheus metrics: ${CLIENTS} simulated agents in ${WORKERS} processes, one svcd ` +
      `(load average before ${loadBefore}, after ${loadAverage()})`,
    '',
    table(
      ['figure', 'p50 / p90 / p99 / max'],
      [
        [
          `GET /metrics, ${SCRAPES} sequential (${sample.body.length} bytes, ${seriesLines} samples)`,
          fmt(scrapes),
        ],
        [`GET /status, ${REQUESTS} sequential, no scraping`, fmt(quiet)],
        [
          `GET /status, ${REQUESTS} sequential, a scrape every ${SLOW_SCRAPE_INTERVAL_MS} ms (${slowScrapes.length} scrapes)`,
          fmt(withSlow),
        ],
        [
          `GET /status, ${REQUESTS} sequential, scraping back to back (${busyScrapes.count} scrapes)`,
          fmt(withBusy),
        ],
        ['GET /metrics while the API is busy (back to back)', fmt(busyScrapes)],
      ],
    ),
    '',
    `links lost while measuring (should be 0): ${held.disconnects}`,
    '',
    checksTable(checks),
    '',
  ];
  const file = await writeResult('metrics', {
    date: new Date().toISOString(),
    settings: { ...SETTINGS, scrapes: SCRAPES, requests: REQUESTS },
    machine: machine(),
    targets: TARGETS,
    checks,
    figures: {
      clients: CLIENTS,
      scrapeBytes: sample.body.length,
      scrapeSamples: seriesLines,
      scrapeMs: scrapes,
      statusQuietMs: quiet,
      statusScrapedEverySecondMs: withSlow,
      statusScrapedBackToBackMs: withBusy,
      scrapeWhileApiBusyMs: busyScrapes,
      disconnectsWhileMeasuring: held.disconnects,
    },
  });
  out.push(`results written to ${file}`, '');
  process.stdout.write(out.join('\n'));
  return checks.every((c) => c.pass);
}

await runBench(main, SETTINGS.strict);
