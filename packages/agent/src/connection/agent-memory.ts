import {
  MemoryReclaim,
  RelayGarbage,
  keepCHeapThresholds,
  monotonicMs,
  reclaimLogFields,
  type LineLogger as Logger,
} from '@svc/platform';
// Its own entry point: a CommonJS module (see there), which the test runner's TypeScript transform does not take.
import { useNativeSsh2Crypto } from '@svc/platform/ssh2-lazy-crypto';

const RECLAIM_MESSAGE =
  'gave back the memory of tunnel traffic and jobs (two full garbage collections, C heap trim)';
const NO_RECLAIM_MESSAGE = 'left the memory of tunnel traffic and jobs to the next reclaim: RSS grew little';

/**
 * How much the RSS must have grown over what the last reclaim left before another one is worth its cost: two full
 * collections cost an agent ~40 ms of CPU (2026-11-28), against ~20 ms for a whole `/usr/bin/true` job, and a small
 * job grows the RSS by far less than this, so commands a few seconds apart paid for a reclaim each. An idle agent
 * thus stays within this much of its last reclaimed size.
 */
export const RECLAIM_MIN_GROWTH_BYTES = 2 * 2 ** 20;
const MIB = 2 ** 20;
/** How long jobs may put off a pending reclaim; tunnel traffic puts it off for as long as it flows. */
const MAX_JOB_DEFERRAL_MS = 30_000;

/**
 * Keeps tunnel traffic and jobs from leaving the agent larger than it was. While a tunnel relays, a
 * young-generation collection every few MiB (RelayGarbage) keeps glibc's heap from growing under the dead
 * Buffers. Once tunnels and jobs have been quiet for a few seconds, two full collections (MemoryReclaim) free
 * what was still in flight and shrink V8's heap back (its young generation grows under a burst of jobs: 1 to 4
 * MiB after 100 commands, ~3 MiB of RSS, and stays grown until a full collection), then glibc gives back the
 * free pages of the C heap, where the Buffers were. From the first tunnel traffic or reclaim on glibc's malloc
 * thresholds are kept at their defaults, so that the arenas of node's worker threads give their free memory back
 * too. A burst that grew the RSS by less than RECLAIM_MIN_GROWTH_BYTES since the last reclaim is left for a later
 * one.
 */
export class AgentMemory {
  private readonly young: RelayGarbage;
  private readonly reclaim: MemoryReclaim;
  private youngCollections = 0;
  private jobs = 0;
  private loadPrepared = false;
  /** What the last reclaim left; undefined before the first, which the first burst always gets. */
  private rssAfterReclaim: number | undefined;
  /** monotonicMs() when the pending reclaim was asked for; undefined when none is pending. */
  private reclaimPendingSince: number | undefined;

  constructor(
    private readonly log: Pick<Logger, 'debug'>,
    private readonly readRss: () => number = () => process.memoryUsage.rss(),
  ) {
    this.reclaim = new MemoryReclaim((outcome) => {
      // Debug: a slow steady transfer, or a job every few seconds, makes one every few seconds.
      log.debug(
        { young_collections: this.youngCollections, jobs: this.jobs, ...reclaimLogFields(outcome) },
        RECLAIM_MESSAGE,
      );
      this.youngCollections = 0;
      this.jobs = 0;
      this.rssAfterReclaim = outcome.rssAfter;
      this.reclaimPendingSince = undefined;
      // Jobs that needed a reclaim may be followed by more of their kind; a small job needs neither, and
      // preparing in its path cost the first command on a fresh agent ~100 ms of CPU (2026-11-28).
      this.prepareForLoad();
    });
    this.young = new RelayGarbage({
      collected: () => {
        this.youngCollections += 1;
        this.afterLoad('traffic');
      },
    });
  }

  /** Told the size of every chunk a tunnel connection passes on. */
  readonly relayed = (bytes: number): void => {
    this.prepareForLoad();
    this.young.add(bytes);
  };

  /** A job has ended. */
  readonly jobEnded = (): void => {
    this.jobs += 1;
    this.afterLoad('job');
  };

  /**
   * Work that left garbage: a reclaim once it has stopped, if the RSS grew enough. Tunnel traffic puts off a
   * pending reclaim until it stops; jobs put off its first collection for MAX_JOB_DEFERRAL_MS at most, and never
   * start it over once that collection has run, since jobs a few seconds apart would put it off for ever, each
   * paying for a first collection.
   */
  private afterLoad(source: 'traffic' | 'job'): void {
    if (this.reclaimPendingSince !== undefined) {
      if (source === 'traffic') this.reclaim.afterLoad();
      // A job once the first collection has run lets the reclaim finish: starting it over would pay for that
      // collection again, and commands a few seconds apart paid for one each (~15 ms of CPU, 2026-11-28).
      else if (!this.reclaim.collecting && monotonicMs() - this.reclaimPendingSince < MAX_JOB_DEFERRAL_MS)
        this.reclaim.afterLoad();
      return;
    }
    const rss = this.readRss();
    const growth = this.rssAfterReclaim === undefined ? Infinity : rss - this.rssAfterReclaim;
    if (growth >= RECLAIM_MIN_GROWTH_BYTES) {
      this.reclaimPendingSince = monotonicMs();
      this.reclaim.afterLoad();
      return;
    }
    this.log.debug(
      { rss_mib: Math.round(rss / MIB), growth_mib: Math.round((growth / MIB) * 10) / 10 },
      NO_RECLAIM_MESSAGE,
    );
  }

  /**
   * The first tunnel traffic, or the first reclaim after jobs. Not at start, since an idle agent needs neither:
   * glibc's malloc thresholds are kept (keepCHeapThresholds), and ssh2's native crypto binding is loaded
   * (useNativeSsh2Crypto).
   */
  private prepareForLoad(): void {
    if (this.loadPrepared) return;
    this.loadPrepared = true;
    const nativeCrypto = useNativeSsh2Crypto();
    void keepCHeapThresholds().then((thresholdsKept) =>
      this.log.debug(
        { native_crypto: nativeCrypto, malloc_thresholds_kept: thresholdsKept },
        'prepared for tunnel traffic and jobs',
      ),
    );
  }

  stop(): void {
    this.reclaim.stop();
  }
}
