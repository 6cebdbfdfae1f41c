import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLineLogger, createLogger, type LineLogger, type LogLevel } from '../src/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-line-logger-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const withoutTime = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((line) => {
      const { time, ...rest } = JSON.parse(line) as { time: string };
      expect(new Date(time).toISOString()).toBe(time);
      return rest;
    });

/** The same calls through pino (createLogger) and the line logger, each to its own file, as parsed lines. */
async function bothLogs(level: LogLevel, calls: (log: LineLogger) => void) {
  const [pinoFile, lineFile] = [
    join(dir, `${level}-pino`, 'out.log'),
    join(dir, `${level}-line`, 'sub', 'out.log'),
  ];
  calls(createLogger({ name: 'svc', level, file: pinoFile }));
  calls(createLineLogger({ name: 'svc', level, file: lineFile }));
  return {
    pino: withoutTime(await readFile(pinoFile, 'utf8')),
    line: withoutTime(await readFile(lineFile, 'utf8')),
  };
}

describe('the line logger writes what pino writes', () => {
  test('messages, fields, errors with causes and codes, levels', async () => {
    const cause = new Error('root cause');
    const err = Object.assign(new Error('outer', { cause }), { code: 'ECONNREFUSED', port: 1 });
    const typed = new TypeError('typed');
    const { pino, line } = await bothLogs('debug', (log) => {
      log.info('plain message');
      log.warn({ host: 'h', port: 22, nested: { list: [1, 'two'] }, gone: undefined }, 'with fields');
      log.debug({ err, host: 'h' }, 'with an error');
      log.error({ msg: 'msg among the fields' });
      log.info({ only: 'fields' });
      log.trace('below the level');
      log.fatal({ err: typed }, 'fatal');
    });
    expect(line).toEqual(pino);
    expect(line).toHaveLength(6);
    expect(line[0]).toMatchObject({ level: 'info', pid: process.pid, name: 'svc', msg: 'plain message' });
    expect(line[2]).toMatchObject({
      err: { type: 'Error', message: 'outer: root cause', code: 'ECONNREFUSED' },
    });
  });

  test('silent writes nothing; warn drops info and debug', async () => {
    const calls = (log: LineLogger) => {
      log.info('no');
      log.debug('no');
      log.warn('yes');
    };
    const warn = await bothLogs('warn', calls);
    expect(warn.line).toEqual(warn.pino);
    expect(warn.line.map((l) => (l as { msg: string }).msg)).toEqual(['yes']);
    createLineLogger({ name: 'svc', level: 'silent', file: join(dir, 'silent.log') }).error('no');
    expect(await readFile(join(dir, 'silent.log'), 'utf8')).toBe('');
  });
});
