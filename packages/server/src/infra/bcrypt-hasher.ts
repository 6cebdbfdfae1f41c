import { hash, verify } from '@node-rs/bcrypt';
import type { PasswordHasher } from '../core/auth/ports.js';

const BCRYPT_HASH = /^\$2[abxy]\$\d{2}\$[./A-Za-z0-9]{53}$/;

export const isBcryptHash = (value: string): boolean => BCRYPT_HASH.test(value);

/** bcrypt on libuv's thread pool (@node-rs/bcrypt), so logins never block the event loop. */
export function createBcryptHasher(cost = 10): PasswordHasher {
  return {
    hash: (password) => hash(password, { cost }),
    async verify(password, stored) {
      if (!isBcryptHash(stored)) return false;
      try {
        return await verify(password, stored);
      } catch {
        return false;
      }
    },
  };
}
