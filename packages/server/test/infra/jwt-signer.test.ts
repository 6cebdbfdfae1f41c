import { createHmac } from 'node:crypto';
import { expect, test } from 'vitest';
import { createJwtSigner } from '../../src/infra/jwt-signer.js';

const SECRET = 'test-secret-that-is-long-enough';
const HEADER = { alg: 'HS256', typ: 'JWT' };
const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const hmac = (input: string, secret = SECRET) =>
  createHmac('sha256', secret).update(input).digest('base64url');

function forge(header: object, payload: object, secret = SECRET): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${hmac(input, secret)}`;
}

const claims = {
  username: 'alice',
  sessionId: 'session-1',
  issuedAt: new Date(1_700_000_000_000),
  expiresAt: new Date(1_700_000_600_000),
};
const atIssue = () => 1_700_000_000_000;

test('a signed token verifies to the same claims until it expires', async () => {
  const signer = createJwtSigner(SECRET, atIssue);
  const token = await signer.sign(claims);
  expect(await signer.verify(token)).toEqual(claims);
  expect(await createJwtSigner(SECRET, () => claims.expiresAt.getTime()).verify(token)).toBeUndefined();
});

test('the algorithm is pinned, the secret matters and the signature must be canonical', async () => {
  const signer = createJwtSigner(SECRET, atIssue);
  const payload = { iss: 'svcd', sub: 'alice', sid: 's', iat: 1_700_000_000, exp: 1_700_000_600 };
  expect(await signer.verify(forge({ alg: 'HS256', typ: 'JWT' }, payload))).toMatchObject({
    username: 'alice',
  });
  expect(await signer.verify(forge({ alg: 'HS512', typ: 'JWT' }, payload))).toBeUndefined();
  expect(await signer.verify(forge({ typ: 'JWT' }, payload))).toBeUndefined();
  // Only the exact header svcd writes is accepted.
  expect(await signer.verify(forge({ alg: 'HS256' }, payload))).toBeUndefined();
  expect(await signer.verify(forge({ typ: 'JWT', alg: 'HS256' }, payload))).toBeUndefined();
  expect(await signer.verify(`${b64({ alg: 'none' })}.${b64(payload)}.`)).toBeUndefined();
  expect(await signer.verify(forge(HEADER, payload, 'another-secret'))).toBeUndefined();
  const token = forge(HEADER, payload);
  expect(await signer.verify(token)).toMatchObject({ sessionId: 's' });
  expect(await signer.verify(token + 'A')).toBeUndefined();
  expect(await signer.verify(token + '=')).toBeUndefined();
});

test('claims must be complete and issued by svcd', async () => {
  const signer = createJwtSigner(SECRET, atIssue);
  const full = { iss: 'svcd', sub: 'alice', sid: 's', iat: 1_700_000_000, exp: 1_700_000_600 };
  for (const broken of [
    { ...full, iss: 'someone-else' },
    { ...full, sub: 42 },
    { ...full, sid: undefined },
    { ...full, exp: '1700000600' },
  ]) {
    expect(await signer.verify(forge(HEADER, broken))).toBeUndefined();
  }
  expect(await signer.verify('a.b')).toBeUndefined();
  expect(await signer.verify('%%%.%%%.%%%')).toBeUndefined();
});

test('a token verified before is still refused once it expires, and tampering is never remembered', async () => {
  let clock = atIssue();
  const signer = createJwtSigner(SECRET, () => clock);
  const token = await signer.sign(claims);
  expect(await signer.verify(token)).toEqual(claims);
  expect(await signer.verify(token)).toEqual(claims);
  // Same signature, other payload: the remembered token must not vouch for it.
  const [header, , signature] = token.split('.');
  const other = b64({
    iss: 'svcd',
    sub: 'mallory',
    sid: 'session-1',
    iat: 1_700_000_000,
    exp: 1_700_000_600,
  });
  expect(await signer.verify(`${header}.${other}.${signature}`)).toBeUndefined();
  clock = claims.expiresAt.getTime();
  expect(await signer.verify(token)).toBeUndefined();
  clock = atIssue();
  // Well past the remembered count, the first token is verified afresh and still accepted.
  for (let i = 0; i < 10_050; i++) await signer.verify(await signer.sign({ ...claims, sessionId: `s-${i}` }));
  expect(await signer.verify(token)).toEqual(claims);
});
