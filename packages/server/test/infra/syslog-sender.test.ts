import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, test } from 'vitest';
import type { AuditRecord } from '../../src/core/audit/ports.js';
import { parseSyslogTarget, SyslogSender } from '../../src/infra/syslog-sender.js';

const record: AuditRecord = {
  timestamp: new Date('2031-06-15T12:00:00.123Z'),
  username: 'al"ice]',
  remote_ip: '192.0.2.7',
  application: 'vault',
  action: 'read',
  outcome: 'refused',
  affected_id: '7',
  client_id: '',
  client_hostname: '',
  request: '{"method":"GET","route":"/vault/:id"}',
  response: '{"status":403}',
};

const silent = { warn: () => undefined, info: () => undefined };

/** RFC 5424: HEADER SP STRUCTURED-DATA SP MSG, parsed strictly enough to fail on a malformed message. */
const RFC5424 =
  /^<(\d{1,3})>1 (\S+) (\S+) (\S+) (\S+) (\S+) \[audit@32473((?: [a-z_]+="(?:[^"\\\]]|\\["\\\]])*")*)\] \ufeff(.*)$/s;

function parse(message: string) {
  const match = RFC5424.exec(message);
  if (!match) throw new Error(`not RFC 5424: ${message}`);
  const params: Record<string, string> = {};
  for (const m of (match[7] ?? '').matchAll(/ ([a-z_]+)="((?:[^"\\\]]|\\["\\\]])*)"/g))
    params[m[1] as string] = (m[2] as string).replace(/\\(["\\\]])/g, '$1');
  return {
    pri: Number(match[1]),
    timestamp: match[2],
    appName: match[4],
    msgid: match[6],
    params,
    msg: match[8],
  };
}

const expectAuditMessage = (text: string) => {
  const parsed = parse(text);
  expect(parsed).toMatchObject({
    pri: 13 * 8 + 4,
    timestamp: '2031-06-15T12:00:00.123Z',
    appName: 'svcd-test',
    msgid: 'read',
    msg: `${record.request} ${record.response}`,
  });
  expect(parsed.params).toEqual({
    user: 'al"ice]',
    ip: '192.0.2.7',
    application: 'vault',
    action: 'read',
    outcome: 'refused',
    affected_id: '7',
  });
};

describe('[audit] syslog', () => {
  test('targets are udp:// or tcp:// with port 514 by default', () => {
    expect(parseSyslogTarget('udp://collector.example')).toEqual({
      protocol: 'udp',
      host: 'collector.example',
      port: 514,
    });
    expect(parseSyslogTarget('tcp://[::1]:6514')).toEqual({ protocol: 'tcp', host: '::1', port: 6514 });
    expect(() => parseSyslogTarget('http://x:1')).toThrow(/udp:\/\/host:port/);
  });

  test('one RFC 5424 datagram per record to a real UDP listener', async () => {
    const listener = createSocket('udp4');
    listener.bind(0, '127.0.0.1');
    await once(listener, 'listening');
    const { port } = listener.address();
    const sender = new SyslogSender({ protocol: 'udp', host: '127.0.0.1', port }, 'svcd-test', silent);
    const received = once(listener, 'message');
    sender.forward(record);
    const [datagram] = (await received) as [Buffer];
    expectAuditMessage(datagram.toString('utf8'));
    await sender.close();
    listener.close();
  });

  test('octet-counted RFC 5424 frames over TCP, sent once the collector accepts', async () => {
    let connection: Socket | undefined;
    const server = createServer((socket) => (connection = socket));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const sender = new SyslogSender({ protocol: 'tcp', host: '127.0.0.1', port }, 'svcd-test', silent);
    sender.forward(record);
    sender.forward({ ...record, outcome: 'success', action: 'create' });
    await once(server, 'connection');
    let data = Buffer.alloc(0);
    const frames: string[] = [];
    while (frames.length < 2) {
      const [chunk] = (await once(connection as Socket, 'data')) as [Buffer];
      data = Buffer.concat([data, chunk]);
      for (;;) {
        const space = data.indexOf(0x20);
        if (space < 0) break;
        const length = Number(data.subarray(0, space).toString());
        if (data.length < space + 1 + length) break;
        frames.push(data.subarray(space + 1, space + 1 + length).toString('utf8'));
        data = data.subarray(space + 1 + length);
      }
    }
    expectAuditMessage(frames[0] as string);
    expect(parse(frames[1] as string)).toMatchObject({ pri: 13 * 8 + 5, msgid: 'create' });
    await sender.close();
    server.close();
  });
});
