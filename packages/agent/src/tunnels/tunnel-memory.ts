import { MemoryReclaim, RelayGarbage, type LineLogger as Logger } from '@svc/platform';

const MIB = 1024 * 1024;

/**
 * Keeps tunnel traffic from leaving the agent larger than it was: a young-generation collection every few MiB
 * relayed (RelayGarbage) keeps glibc's heap from growing under the dead Buffers, and once traffic has stopped
 * for a few seconds, two full collections (MemoryReclaim) free what was still in flight and shrink V8's heap back.
 */
export class TunnelMemory {
  private readonly young: RelayGarbage;
  private readonly reclaim: MemoryReclaim;
  private youngCollections = 0;

  constructor(log: Pick<Logger, 'debug'>) {
    this.reclaim = new MemoryReclaim(({ pausesMs, rssBefore, rssAfter }) => {
      // Debug: a slow steady transfer (2 MiB every few seconds) makes one every few seconds.
      log.debug(
        {
          young_collections: this.youngCollections,
          pauses_ms: pausesMs.map((ms) => Math.round(ms)),
          rss_mib: [rssBefore, rssAfter].map((bytes) => Math.round(bytes / MIB)),
        },
        'gave back the memory of tunnel traffic (two full garbage collections)',
      );
      this.youngCollections = 0;
    });
    this.young = new RelayGarbage({
      collected: () => {
        this.youngCollections += 1;
        this.reclaim.afterLoad();
      },
    });
  }

  /** Told the size of every chunk a tunnel connection passes on. */
  readonly relayed = (bytes: number): void => this.young.add(bytes);

  stop(): void {
    this.reclaim.stop();
  }
}
