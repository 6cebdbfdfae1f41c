import { expect, test } from 'vitest';
import { parseSvcdConfig } from '../../src/config/schema.js';

const problemsOf = (text: string): string[] => {
  try {
    parseSvcdConfig(text);
    return [];
  } catch (error) {
    return (error as { problems: string[] }).problems;
  }
};

const SMTP = '[smtp]\nserver = "127.0.0.1:2525"\nsender_email = "svcd@example.com"\n';

test('[[alerts.rules]] tables load with durations in milliseconds', () => {
  const config = parseSvcdConfig(
    [
      SMTP,
      '[alerts]',
      'retry_base = "500ms"',
      '[[alerts.rules]]',
      'name = "offline"',
      'event = "client_offline"',
      'after = "5m"',
      'tags = ["prod"]',
      'webhook = { url = "https://hooks.example.com/svc", secret = "0123456789abcdef" }',
      '[[alerts.rules]]',
      'name = "runs"',
      'event = "run_failed"',
      'email = ["ops@example.com"]',
    ].join('\n'),
  );
  expect(config.alerts.retry_base).toBe(500);
  expect(config.alerts.rules).toEqual([
    {
      name: 'offline',
      event: 'client_offline',
      after: 300_000,
      tags: ['prod'],
      webhook: { url: 'https://hooks.example.com/svc', secret: '0123456789abcdef' },
    },
    { name: 'runs', event: 'run_failed', email: ['ops@example.com'] },
  ]);
});

test('bad rules are refused with the key named', () => {
  const rule = (...lines: string[]) => problemsOf(['[[alerts.rules]]', ...lines].join('\n'));
  expect(rule('name = "x"', 'event = "run_failed"')).toEqual([
    '[alerts] rules[0].webhook: set webhook and/or email: an alert needs a channel',
  ]);
  expect(
    rule(
      'name = "x"',
      'event = "run_failed"',
      'webhook = { url = "ftp://h/x", secret = "0123456789abcdef" }',
    )[0],
  ).toMatch(/rules\[0\]\.webhook\.url: expected an http:\/\/ or https:\/\/ URL/);
  expect(
    rule('name = "x"', 'event = "run_failed"', 'webhook = { url = "http://h/x", secret = "short" }')[0],
  ).toMatch(/webhook\.secret: must be at least 16 characters/);
  expect(
    rule(
      'name = "x"',
      'event = "run_failed"',
      'webhook = { url = "http://u:p@h/x", secret = "0123456789abcdef" }',
    )[0],
  ).toMatch(/webhook\.url: must not carry user:password@/);
  expect(rule('name = "x"', 'event = "client_offline"', 'email = ["a@b"]').join('\n')).toMatch(
    /rules\[0\]\.after: client_offline needs after/,
  );
  expect(rule('name = "x"', 'event = "run_failed"', 'after = "1m"', 'email = ["a@b"]').join('\n')).toMatch(
    /only client_offline takes after/,
  );
  expect(rule('name = "x"', 'event = "disk_full"', 'email = ["a@b"]').join('\n')).toMatch(
    /rules\[0\]\.event/,
  );
  expect(rule('name = "x"', 'event = "run_failed"', 'email = ["a@b"]').join('\n')).toMatch(
    /\[smtp\] server: required when an alert rule sends e-mail/,
  );
});

test('two rules with one name are refused', () => {
  const twice = [
    '[[alerts.rules]]',
    'name = "x"',
    'event = "run_failed"',
    'webhook = { url = "http://h/x", secret = "0123456789abcdef" }',
  ];
  expect(problemsOf([...twice, ...twice].join('\n')).join('\n')).toMatch(/duplicate rule name x/);
});
