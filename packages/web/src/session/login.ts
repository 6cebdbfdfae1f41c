import { apiRequest } from '../api/client.js';
import type { LoginData } from '../api/types.js';
import { tokenExpiry, tokenIssuedAt } from '../lib/jwt.js';
import { session } from './session.js';

/** A working day; the console renews the token shortly before it ends (svcd caps it at `[api] max_token_lifetime`). */
export const TOKEN_LIFETIME_S = 8 * 3600;

export type TwoFaInfo = NonNullable<LoginData['two_fa']>;

export type LoginStep =
  { kind: 'done' } | { kind: 'second-factor'; username: string; loginToken: string; twoFa: TwoFaInfo };

/** Basic credentials as UTF-8 (btoa alone takes Latin-1 only). */
function basic(username: string, password: string): string {
  const bytes = new TextEncoder().encode(`${username}:${password}`);
  return `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

function startSession(username: string, token: string): void {
  const issuedAt = tokenIssuedAt(token);
  session.start({
    token,
    username,
    expiresAt: tokenExpiry(token) ?? Date.now() + TOKEN_LIFETIME_S * 1000,
    ...(issuedAt === undefined ? {} : { issuedAt }),
  });
}

export async function passwordLogin(username: string, password: string): Promise<LoginStep> {
  const query = new URLSearchParams({ 'token-lifetime': String(TOKEN_LIFETIME_S) });
  const { data } = await apiRequest<{ data: LoginData }>('/login', {
    query,
    authorization: basic(username, password),
  });
  if (data.two_fa) return { kind: 'second-factor', username, loginToken: data.token, twoFa: data.two_fa };
  startSession(username, data.token);
  return { kind: 'done' };
}

export async function verifySecondFactor(step: Extract<LoginStep, { kind: 'second-factor' }>, code: string) {
  const query = new URLSearchParams({ 'token-lifetime': String(TOKEN_LIFETIME_S) });
  const { data } = await apiRequest<{ data: LoginData }>('/verify-2fa', {
    method: 'POST',
    query,
    body: { username: step.username, token: code.trim() },
    authorization: `Bearer ${step.loginToken}`,
  });
  startSession(step.username, data.token);
}

/** The authenticator-app secret and its QR code, created on first use (login token of a pending user). */
export async function totpEnrolment(loginToken: string): Promise<{ secret: string; qr: string }> {
  return apiRequest<{ secret: string; qr: string }>('/me/totp-secret', {
    method: 'POST',
    authorization: `Bearer ${loginToken}`,
  });
}
