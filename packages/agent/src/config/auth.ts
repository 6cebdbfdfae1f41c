export interface Credentials {
  id: string;
  password: string;
}

const MAX_LENGTH = 100;

/** Parses `<client-auth-id>:<password>`, split at the first colon; the password never appears in a message. */
export function parseAuth(text: string): Credentials {
  const colon = text.indexOf(':');
  if (colon < 0) throw new Error('must be <client-auth-id>:<password> (no colon found)');
  const id = text.slice(0, colon);
  const password = text.slice(colon + 1);
  if (id === '') throw new Error('must be <client-auth-id>:<password>; the id before the colon is empty');
  if (password === '')
    throw new Error('must be <client-auth-id>:<password>; the password after the colon is empty');
  if (id.length > MAX_LENGTH) throw new Error(`the client-auth-id must be at most ${MAX_LENGTH} characters`);
  if (password.length > MAX_LENGTH) throw new Error(`the password must be at most ${MAX_LENGTH} characters`);
  return { id, password };
}
