/**
 * `[audit] syslog`: each audit record as one RFC 5424 message to a collector, over UDP (one datagram each) or
 * TCP (octet-counting framing, RFC 6587). Sending never blocks or throws: while the TCP connection is down,
 * messages wait in a bounded buffer (dropped and counted beyond it) and the connection is retried.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect, type Socket } from 'node:net';
import { hostname } from 'node:os';
import type { AuditForwarder, AuditLogger, AuditRecord } from '../core/audit/ports.js';

/** Facility 13 (log audit); notice for what succeeded, warning for refusals and failures. */
const FACILITY = 13;
const SEVERITY = { success: 5, failure: 4, refused: 4 } as const;
/** An IANA private enterprise number is required in an SD-ID; 32473 is the one reserved for documentation. */
const SD_ID = 'audit@32473';
const MAX_BUFFERED = 10_000;
const RETRY_MS = 2000;

export interface SyslogTarget {
  protocol: 'udp' | 'tcp';
  host: string;
  port: number;
}

/** `udp://host:port` or `tcp://host:port` (port 514 when absent); throws on anything else. */
export function parseSyslogTarget(url: string): SyslogTarget {
  const match = /^(udp|tcp):\/\/(\[[^\]]+\]|[^:/]+)(?::(\d{1,5}))?\/?$/.exec(url.trim());
  const port = Number(match?.[3] ?? 514);
  if (!match || port < 1 || port > 65_535) {
    throw new Error(`[audit] syslog must be udp://host:port or tcp://host:port, got "${url}"`);
  }
  return { protocol: match[1] as 'udp' | 'tcp', host: (match[2] as string).replace(/^\[|\]$/g, ''), port };
}

const sdValue = (value: string): string => value.replace(/["\\\]]/g, (c) => `\\${c}`);
/** PRINTUSASCII without spaces, at most `max` characters; NILVALUE when empty. */
const header = (value: string, max: number): string =>
  value.replace(/[^\x21-\x7e]/g, '_').slice(0, max) || '-';

/** One record as an RFC 5424 message (without transport framing). */
export function formatSyslog(record: AuditRecord, appName: string, host = hostname()): string {
  const pri = FACILITY * 8 + SEVERITY[record.outcome];
  const params = (
    [
      ['user', record.username],
      ['ip', record.remote_ip],
      ['application', record.application],
      ['action', record.action],
      ['outcome', record.outcome],
      ['affected_id', record.affected_id],
      ['client_id', record.client_id],
      ['client_hostname', record.client_hostname],
    ] as const
  )
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `${k}="${sdValue(v)}"`)
    .join(' ');
  const msg = `${record.request} ${record.response}`;
  return (
    `<${pri}>1 ${record.timestamp.toISOString()} ${header(host, 255)} ${header(appName, 48)} ${process.pid} ` +
    `${header(record.action, 32)} [${SD_ID} ${params}] \ufeff${msg}`
  );
}

export class SyslogSender implements AuditForwarder {
  private udp: UdpSocket | undefined;
  private tcp: Socket | undefined;
  private tcpReady = false;
  private buffered: Buffer[] = [];
  private retry: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private droppedCount = 0;

  constructor(
    private readonly target: SyslogTarget,
    private readonly appName: string,
    private readonly log: AuditLogger,
  ) {
    if (target.protocol === 'udp') {
      this.udp = createSocket(target.host.includes(':') ? 'udp6' : 'udp4');
      this.udp.on('error', (err) => this.log.warn({ err }, 'audit syslog: UDP send failed'));
      this.udp.unref();
    } else {
      this.connectTcp();
    }
  }

  get dropped(): number {
    return this.droppedCount;
  }

  forward(record: AuditRecord): void {
    if (this.closed) return;
    const message = Buffer.from(formatSyslog(record, this.appName), 'utf8');
    if (this.udp) {
      this.udp.send(message, this.target.port, this.target.host);
      return;
    }
    const framed = Buffer.concat([Buffer.from(`${message.length} `), message]);
    if (this.tcpReady && this.tcp) this.tcp.write(framed);
    else if (this.buffered.length < MAX_BUFFERED) this.buffered.push(framed);
    else this.droppedCount++;
  }

  private connectTcp(): void {
    const socket = connect({ host: this.target.host, port: this.target.port });
    this.tcp = socket;
    socket.setNoDelay(true);
    socket.on('connect', () => {
      this.tcpReady = true;
      for (const framed of this.buffered) socket.write(framed);
      this.buffered = [];
    });
    socket.on('error', (err) => this.log.warn({ err }, 'audit syslog: TCP connection failed'));
    socket.on('close', () => {
      this.tcpReady = false;
      if (this.tcp === socket) this.tcp = undefined;
      if (!this.closed) {
        this.retry = setTimeout(() => this.connectTcp(), RETRY_MS);
        this.retry.unref();
      }
    });
    socket.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const udp = this.udp;
    if (udp) await new Promise<void>((resolve) => udp.close(() => resolve()));
    const tcp = this.tcp;
    if (tcp) {
      if (this.tcpReady) await new Promise<void>((resolve) => tcp.end(resolve));
      tcp.destroy();
    }
  }
}
