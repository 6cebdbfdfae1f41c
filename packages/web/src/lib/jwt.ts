/** A numeric claim of a JWT (the console only reads them to plan renewal; svcd checks tokens). */
function numericClaim(token: string, claim: 'exp' | 'iat'): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'));
    const value = (JSON.parse(json) as Record<string, unknown>)[claim];
    return typeof value === 'number' ? value * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** The `exp` of a JWT in epoch milliseconds. */
export const tokenExpiry = (token: string): number | undefined => numericClaim(token, 'exp');

/** The `iat` of a JWT in epoch milliseconds. */
export const tokenIssuedAt = (token: string): number | undefined => numericClaim(token, 'iat');
