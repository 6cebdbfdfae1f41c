/** Properties of the agent control channel's reader on generated input (fast-check, fixed seed). */
import fc from 'fast-check';
import type { Duplex } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { CONTROL_ERRORS, CONTROL_MESSAGES, CONTROL_VERSION } from '@svc/protocol';
import { ControlPeer } from '../src/control-peer.js';
import { duplexPair } from '../../../test-support/duplex-pair.js';
import { TEST_FACTS } from '../../../test-support/facts.js';

const RUNS = { numRuns: 150, seed: 20_241_128 };
const KNOWN_ERROR_CODES: readonly string[] = Object.values(CONTROL_ERRORS);

/** A server end with handlers for what an agent sends, and the raw agent end of its stream. */
function serverEnd() {
  const [agentSide, serverSide] = duplexPair();
  const problems: string[] = [];
  const tags: string[][] = [];
  const server = new ControlPeer(serverSide, { side: 'server', onProtocolError: (p) => problems.push(p) });
  server.on('hello', () => ({ server_version: 'test', keepalive_interval_ms: 1000 }));
  server.on('facts.update', (payload) => void tags.push(payload.tags));
  server.on('ping', () => ({}));
  return { server, agentSide, problems, tags };
}

/** The lines the server writes back until `stopWhen` says so or the server closes the stream. */
function collectReplies(agentSide: Duplex, stopWhen: (line: string) => boolean) {
  return new Promise<{ lines: string[]; ended: boolean }>((resolve) => {
    const lines: string[] = [];
    let buffer = '';
    agentSide.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        lines.push(line);
        if (stopWhen(line)) resolve({ lines, ended: false });
      }
    });
    agentSide.on('end', () => resolve({ lines, ended: true }));
  });
}

const line = (message: unknown) => JSON.stringify(message) + '\n';

describe('control channel (properties)', () => {
  test('messages split at any byte, even inside a UTF-8 character, arrive whole and in order', async () => {
    const tagLists = fc.array(fc.array(fc.string({ unit: 'binary', maxLength: 20 }), { maxLength: 3 }), {
      minLength: 1,
      maxLength: 8,
    });
    await fc.assert(
      fc.asyncProperty(tagLists, fc.array(fc.nat(), { maxLength: 10 }), async (lists, cutSeeds) => {
        const { agentSide, tags, problems } = serverEnd();
        const bytes = Buffer.from(
          lists
            .map((list) =>
              line({
                v: CONTROL_VERSION,
                type: 'facts.update',
                payload: { tags: list, labels: {}, facts: TEST_FACTS },
              }),
            )
            .join('') + line({ v: CONTROL_VERSION, type: 'ping', id: 'probe', payload: {} }),
        );
        const cuts = [...new Set(cutSeeds.map((seed) => seed % bytes.length))].sort((x, y) => x - y);
        const answered = collectReplies(agentSide, (l) => l.includes('"probe"'));
        let from = 0;
        for (const cut of [...cuts, bytes.length]) {
          agentSide.write(bytes.subarray(from, cut));
          from = cut;
        }
        expect((await answered).ended).toBe(false);
        expect(problems).toEqual([]);
        expect(tags).toEqual(lists);
      }),
      RUNS,
    );
  });

  test('any line is answered once with a reply or a known error, or closes the channel as a protocol error', async () => {
    const types = fc.oneof(
      fc.constantFrom(...Object.keys(CONTROL_MESSAGES), 'reply', 'error', '', 'x'.repeat(65)),
      fc.string({ maxLength: 10 }),
    );
    const envelope = fc.record(
      {
        v: fc.oneof(fc.constant(CONTROL_VERSION), fc.constantFrom(0, 2, '1', null)),
        type: types,
        id: fc.oneof(
          fc.string({ minLength: 1, maxLength: 10 }).filter((id) => id !== 'probe'),
          fc.constantFrom('x'.repeat(65), 7),
        ),
        payload: fc.oneof(
          fc.jsonValue({ maxDepth: 2 }),
          fc.constant({ host: 'h', port: 22 }),
          fc.constant({ tags: [], labels: {}, facts: TEST_FACTS }),
        ),
      },
      { requiredKeys: ['v', 'type'] },
    );
    const anyLine = fc.oneof(
      envelope.map((e) => JSON.stringify(e)),
      fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => !s.includes('\n')),
    );
    await fc.assert(
      fc.asyncProperty(anyLine, async (text) => {
        const { agentSide, server, problems } = serverEnd();
        const answered = collectReplies(agentSide, (l) => l.includes('"probe"'));
        agentSide.write(text + '\n' + line({ v: CONTROL_VERSION, type: 'ping', id: 'probe', payload: {} }));
        const { lines, ended } = await answered;
        const sent = parseEnvelope(text);
        if (sent === 'blank') {
          expect(ended).toBe(false);
          return;
        }
        if (sent === 'invalid') {
          expect(ended).toBe(true);
          expect(server.isClosed).toBe(true);
          expect(problems).toHaveLength(1);
          return;
        }
        expect(ended).toBe(false);
        expect(problems).toEqual([]);
        const answers = lines
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .filter((m) => m.id !== 'probe');
        const expectsAnswer = sent.id !== undefined && sent.type !== 'reply' && sent.type !== 'error';
        expect(answers).toHaveLength(expectsAnswer ? 1 : 0);
        for (const answer of answers) {
          expect(answer).toMatchObject({ v: CONTROL_VERSION, id: sent.id });
          if (answer.type === 'error')
            expect(KNOWN_ERROR_CODES).toContain((answer.payload as { code: string }).code);
          else expect(answer.type).toBe('reply');
        }
      }),
      RUNS,
    );
  });
});

/** The envelope rules, stated independently of the schema: what the reader must accept. */
function parseEnvelope(text: string): 'blank' | 'invalid' | { type: string; id: string | undefined } {
  if (text === '') return 'blank';
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return 'invalid';
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return 'invalid';
  const { v, type, id } = json as Record<string, unknown>;
  if (v !== CONTROL_VERSION || typeof type !== 'string' || type.length < 1 || type.length > 64)
    return 'invalid';
  if (id !== undefined && (typeof id !== 'string' || id.length > 64)) return 'invalid';
  // Every message carries a payload, `{}` when there is nothing to say.
  if (!Object.hasOwn(json, 'payload')) return 'invalid';
  return { type, id };
}
