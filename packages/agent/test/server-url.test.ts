import { expect, test } from 'vitest';
import { toWebSocketUrl } from '../src/config/server-url.js';

test.each([
  ['http://svcd.example.com:8080', 'ws://svcd.example.com:8080/'],
  ['https://svcd.example.com:8443', 'wss://svcd.example.com:8443/'],
  ['https://svcd.example.com', 'wss://svcd.example.com/'],
  ['HTTP://Svcd.Example.com:8080', 'ws://svcd.example.com:8080/'],
  ['svcd.example.com:8080', 'ws://svcd.example.com:8080/'],
  ['127.0.0.1:8080', 'ws://127.0.0.1:8080/'],
  ['[::1]:8080', 'ws://[::1]:8080/'],
  ['ws://host:1', 'ws://host:1/'],
  ['wss://host:1/agents', 'wss://host:1/agents'],
  ['https://proxy.example.com/svc/', 'wss://proxy.example.com/svc/'],
  ['  host:9000  ', 'ws://host:9000/'],
])('%s → %s', (input, expected) => {
  expect(toWebSocketUrl(input)).toBe(expected);
});

test.each([
  ['', /empty/],
  ['localhost', /needs a port or a scheme/],
  ['ftp://host:21', /unsupported scheme/],
  ['http://user:pw@host:80', /must not contain credentials/],
  ['http://host:80/#x', /fragment/],
  ['http://host:99999', /not a valid URL/],
  ['host:port', /needs a port or a scheme/],
])('refuses %j', (input, message) => {
  expect(() => toWebSocketUrl(input)).toThrow(message);
});
