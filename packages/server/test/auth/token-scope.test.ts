import { describe, expect, test } from 'vitest';
import type { ApiTokenScope } from '@svc/protocol';
import { scopeAllows } from '../../src/core/api-tokens/token-scope.js';

type Row = [ApiTokenScope, string, string, boolean];

const ROWS: Row[] = [
  ['read', 'GET', '/api/v1/status', true],
  ['read', 'HEAD', '/api/v1/clients', true],
  ['read', 'get', '/api/v1/users', true],
  ['read', 'GET', '/api/v1/clients-auth', true],
  ['read', 'GET', '/api/v1/me/tokens', true],
  ['read', 'POST', '/api/v1/users', false],
  ['read', 'PUT', '/api/v1/me', false],
  ['read', 'DELETE', '/api/v1/me/tokens/:prefix', false],
  ['read', 'POST', '/api/v1/clients/:client_id/commands', false],
  ['read', 'GET', '/api/v1/ws/commands', false],
  ['read', 'GET', '/api/v1/ws/scripts', false],
  ['read+write', 'GET', '/api/v1/status', true],
  ['read+write', 'POST', '/api/v1/users', true],
  ['read+write', 'DELETE', '/api/v1/clients-auth/:id', true],
  ['read+write', 'GET', '/api/v1/ws/commands', true],
  ['clients-auth', 'GET', '/api/v1/clients-auth', true],
  ['clients-auth', 'POST', '/api/v1/clients-auth', true],
  ['clients-auth', 'DELETE', '/api/v1/clients-auth/:id', true],
  ['clients-auth', 'GET', '/api/v1/status', false],
  ['clients-auth', 'GET', '/api/v1/clients', false],
  ['clients-auth', 'GET', '/api/v1/clients-authx', false],
  ['clients-auth', 'POST', '/api/v1/me/tokens', false],
  ['clients-auth', 'GET', '/api/v1/ws/commands', false],
];

describe('API token scopes', () => {
  test.each(ROWS)('%s token, %s %s → allowed: %s', (scope, method, path, allowed) => {
    expect(scopeAllows(scope, method, path)).toBe(allowed);
  });
});
