import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-svc-signature';
export const TIMESTAMP_HEADER = 'x-svc-timestamp';

/**
 * `sha256=<hex>`: HMAC-SHA256 with the rule's secret of `<timestamp>.<body>`, the timestamp (Unix seconds) being
 * the X-Svc-Timestamp header, so a receiver can refuse a replayed old message.
 */
export function signAlert(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** What a receiver does: true when the header matches the body and timestamp. */
export function verifyAlert(secret: string, timestamp: number, body: string, header: string): boolean {
  const expected = Buffer.from(signAlert(secret, timestamp, body));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
