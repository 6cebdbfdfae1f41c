import {
  MemoryReclaim,
  RelayGarbage,
  keepCHeapThresholds,
  reclaimLogFields,
  type LineLogger as Logger,
} from '@svc/platform';
// Its own entry point: a CommonJS module (see there), which the test runner's TypeScript transform does not take.
import { useNativeSsh2Crypto } from '@svc/platform/ssh2-lazy-crypto';

const RECLAIM_MESSAGE =
  'gave back the memory of tunnel traffic and jobs (two full garbage collections, C heap trim)';

/**
 * Keeps tunnel traffic and jobs from leaving the agent larger than it was. While a tunnel relays, a
 * young-generation collection every few MiB (RelayGarbage) keeps glibc's heap from growing under the dead
 * Buffers. Once tunnels and jobs have been quiet for a few seconds, two full collections (MemoryReclaim) free
 * what was still in flight and shrink V8's heap back (its young generation grows under a burst of jobs: 1 to 4
 * MiB after 100 commands, ~3 MiB of RSS, and stays grown until a full collection), then glibc gives back the
 * free pages of the C heap, where the Buffers were. From the first burst on glibc's malloc thresholds are kept at
 * their defaults, so that the arenas of node's worker threads give their free memory back too.
 */
export class AgentMemory {
  private readonly young: RelayGarbage;
  private readonly reclaim: MemoryReclaim;
  private youngCollections = 0;
  private jobs = 0;
  private loadPrepared = false;

  constructor(private readonly log: Pick<Logger, 'debug'>) {
    this.reclaim = new MemoryReclaim((outcome) => {
      // Debug: a slow steady transfer, or a job every few seconds, makes one every few seconds.
      log.debug(
        { young_collections: this.youngCollections, jobs: this.jobs, ...reclaimLogFields(outcome) },
        RECLAIM_MESSAGE,
      );
      this.youngCollections = 0;
      this.jobs = 0;
    });
    this.young = new RelayGarbage({
      collected: () => {
        this.youngCollections += 1;
        this.reclaim.afterLoad();
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
    this.prepareForLoad();
    this.jobs += 1;
    this.reclaim.afterLoad();
  };

  /**
   * The first tunnel traffic or job. Now, not at start, since an idle agent needs neither: glibc's malloc
   * thresholds are kept (keepCHeapThresholds), and ssh2's native crypto binding is loaded (useNativeSsh2Crypto).
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
