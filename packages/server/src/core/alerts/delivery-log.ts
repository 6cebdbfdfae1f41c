import type { AlertDelivery } from '@svc/protocol';

/** The newest delivery attempts, at most `size` (oldest dropped first); what GET /alerts/deliveries lists. */
export class DeliveryLog {
  private readonly entries: AlertDelivery[] = [];
  private seq = 0;

  constructor(private readonly size: number) {}

  add(entry: Omit<AlertDelivery, 'id'>): AlertDelivery {
    this.seq += 1;
    const stored = { id: this.seq, ...entry };
    this.entries.push(stored);
    if (this.entries.length > this.size) this.entries.splice(0, this.entries.length - this.size);
    return stored;
  }

  all(): readonly AlertDelivery[] {
    return this.entries;
  }
}
