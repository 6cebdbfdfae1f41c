/**
 * How a /ws/commands session ends, through real processes: svcd, a real svc agent, and a WebSocket client on a raw
 * socket that behaves as OpenRPort's rportcli (gorilla/websocket) does: it reads until the connection ends, answers
 * a close frame by itself, and then sends its own close frame — which fails ("failed to write close message") when
 * it has already answered one. A browser (it sends Origin) gets svcd's close frame and answers it.
 */
import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createApiClient } from '../test-support/api-client.js';
import {
  E2E_ADMIN,
  startSvcdProcess,
  svcdFingerprint,
  writeAdminUserFile,
  writeSvcdConfig,
} from '../test-support/e2e-setup.js';
import { SVC_BIN, freePort, parseLog, startProcess, type RunningProcess } from '../test-support/process.js';
import { OPCODE, closePayload, controlFrame, frameHeader } from '../packages/platform/src/ws-frames.js';

interface Frame {
  opcode: number;
  payload: Buffer;
}

/** A client socket after the upgrade: the frames svcd sent, in order, and whether svcd has ended its side. */
interface RawSession {
  socket: Socket;
  frames: Frame[];
  /** Resolves when svcd's side of the connection ends (FIN), with the frames received until then. */
  ended: Promise<Frame[]>;
  /** Resolves once a frame with this opcode has arrived. */
  frame(opcode: number): Promise<Frame>;
  closed: Promise<void>;
}

let dir: string;
let svcd: RunningProcess;
let agent: RunningProcess | undefined;
let apiPort: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-e2e-ws-close-'));
  const clientPort = await freePort();
  apiPort = await freePort();
  await writeAdminUserFile(dir);
  const configPath = await writeSvcdConfig(dir, {
    clientPort,
    apiPort,
    keySeed: 'e2e-ws-close-seed',
    server: ['auth = "agent:agent-password-1"'],
  });
  // The session's end is read from svcd's debug line.
  await appendFile(configPath, '\n[logging]\nlog_level = "debug"\n');
  svcd = await startSvcdProcess(configPath);
  const fingerprint = await svcdFingerprint(createApiClient(`http://127.0.0.1:${apiPort}/api/v1`));
  agent = startProcess(
    SVC_BIN,
    [
      `http://127.0.0.1:${clientPort}`,
      '--auth',
      'agent:agent-password-1',
      '--id',
      'ws-close-agent',
      '--fingerprint',
      fingerprint,
      '--data-dir',
      join(dir, 'agent-data'),
    ],
    { env: { SVC_AUTH: undefined } },
  );
  await agent.waitForLog('connected to svcd');
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await svcd?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Opens /api/v1/ws/commands with Basic auth, with or without an Origin header. */
function openRawSocket(origin: string | undefined): Promise<RawSession> {
  return new Promise((resolve, reject) => {
    // Half-open allowed, as a Go client's connection: svcd's FIN does not end this side by itself.
    const socket = connect({ port: apiPort, host: '127.0.0.1', allowHalfOpen: true });
    const credentials = Buffer.from(`${E2E_ADMIN.username}:${E2E_ADMIN.password}`).toString('base64');
    socket.write(
      [
        'GET /api/v1/ws/commands HTTP/1.1',
        `Host: 127.0.0.1:${apiPort}`,
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
        'Sec-WebSocket-Version: 13',
        `Authorization: Basic ${credentials}`,
        ...(origin ? [`Origin: ${origin}`] : []),
        '',
        '',
      ].join('\r\n'),
    );
    const frames: Frame[] = [];
    const waiters: (() => void)[] = [];
    let buffer = Buffer.alloc(0);
    let upgraded = false;
    const parseFrames = () => {
      for (;;) {
        if (buffer.length < 2) return;
        const short = (buffer[1] ?? 0) & 0x7f;
        const lengthBytes = short === 126 ? 2 : short === 127 ? 8 : 0;
        if (buffer.length < 2 + lengthBytes) return;
        const length =
          lengthBytes === 2
            ? buffer.readUInt16BE(2)
            : lengthBytes === 8
              ? Number(buffer.readBigUInt64BE(2))
              : short;
        const start = 2 + lengthBytes;
        if (buffer.length < start + length) return;
        frames.push({ opcode: (buffer[0] ?? 0) & 0x0f, payload: buffer.subarray(start, start + length) });
        buffer = buffer.subarray(start + length);
        for (const wake of waiters.splice(0)) wake();
      }
    };
    const ended = new Promise<Frame[]>((done) => socket.once('end', () => done([...frames])));
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!upgraded) {
        const headEnd = buffer.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const head = buffer.subarray(0, headEnd).toString();
        if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(`upgrade refused: ${head}`));
        upgraded = true;
        buffer = buffer.subarray(headEnd + 4);
        resolve({
          socket,
          frames,
          ended,
          closed,
          frame: (opcode) =>
            new Promise((found) => {
              const check = () => {
                const hit = frames.find((f) => f.opcode === opcode);
                if (hit) found(hit);
                else waiters.push(check);
              };
              check();
            }),
        });
      }
      parseFrames();
    });
  });
}

/** A client's text frame: masked, as RFC 6455 requires of clients. */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const key = randomBytes(4);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ (key[i % 4] ?? 0)));
  return Buffer.concat([frameHeader(OPCODE.text, payload.length, key), masked]);
}

/** Writes a client close frame; resolves with the write's error, if any (what gorilla would report). */
function sendClose(socket: Socket): Promise<Error | null | undefined> {
  return new Promise((done) =>
    socket.write(controlFrame(OPCODE.close, closePayload(1000), true), (err) => done(err)),
  );
}

/** svcd's debug line for this session's end, from the svcd process's log. */
const closedLog = (after: number) =>
  svcd.waitForLine((line) => {
    const log = parseLog(line);
    return log?.msg === 'job socket closed' && Date.parse(String(log.time)) >= after;
  });

// rportcli's request, keys and values as it sends them.
const REQUEST =
  '{"client_ids":["ws-close-agent"],"is_sudo":false,"execute_concurrently":false,"abort_on_error":true,' +
  '"timeout_sec":0,"command":"/usr/bin/echo from a real agent","script":"","cwd":"","interpreter":""}';

const texts = (frames: Frame[]) =>
  frames
    .filter((f) => f.opcode === OPCODE.text)
    .map((f) => JSON.parse(f.payload.toString()) as Record<string, unknown>);

test('rportcli (no Origin): the result, then the end of the stream without a close frame; its own close is read', async () => {
  const startedAt = Date.now();
  const session = await openRawSocket(undefined);
  session.socket.write(textFrame(REQUEST));
  const beforeEnd = await session.ended;
  // No close frame from svcd: a gorilla client has nothing to answer, so its own close frame is the first.
  expect(beforeEnd.map((f) => f.opcode).filter((op) => op !== OPCODE.text)).toEqual([]);
  const final = texts(beforeEnd).find((m) => m.finished_at);
  expect(final).toMatchObject({
    client_id: 'ws-close-agent',
    status: 'successful',
    result: { stdout: 'from a real agent\n' },
  });
  expect(await sendClose(session.socket)).toBeFalsy();
  session.socket.end();
  await session.closed;
  // svcd read the client's close frame: the session ended with the client's code, after svcd was done.
  const line = parseLog(await closedLog(startedAt));
  expect(line).toMatchObject({ code: 1000, after_done: true });
});

test('a browser (Origin): the result, then svcd close frame 1000; the browser answers it and the connection ends', async () => {
  const startedAt = Date.now();
  const session = await openRawSocket(`http://127.0.0.1:${apiPort}`);
  session.socket.write(textFrame(REQUEST));
  const close = await session.frame(OPCODE.close);
  expect(close.payload.readUInt16BE(0)).toBe(1000);
  // The close frame comes after the final result.
  const opcodes = session.frames.map((f) => f.opcode);
  expect(opcodes.at(-1)).toBe(OPCODE.close);
  expect(texts(session.frames).some((m) => m.finished_at && m.status === 'successful')).toBe(true);
  // The browser answers; svcd then closes the connection (RFC 6455 7.1.1: the server closes TCP first).
  expect(await sendClose(session.socket)).toBeFalsy();
  await session.ended;
  session.socket.end();
  await session.closed;
  expect(parseLog(await closedLog(startedAt))).toMatchObject({ code: 1000, after_done: true });
});
