/** Failed password checks from one address, whoever they named. */
export interface AddressFailures {
  /** Failures in a row (a success from the address resets them). */
  count: number;
  bannedUntil: number;
}

/** One user seen from one address. */
export interface UserAtAddress {
  /** No password try for this user from this address before this time (ms). */
  retryAt: number;
  /** The last successful login of this user from this address (ms); 0 = none. */
  lastSuccessAt: number;
}

/** Failed guesses at one user's password from all addresses, in the current window. */
export interface UserGuesses {
  windowStart: number;
  count: number;
}

/** Records that forget themselves at `expiresAt` (ms); `now` is the guard's clock. */
export interface ExpiringRecords<T> {
  get(key: string, now: number): Promise<T | undefined>;
  set(key: string, value: T, expiresAt: number, now: number): Promise<void>;
  delete(key: string): Promise<void>;
}

/**
 * Where the login throttle keeps its state. In memory for now (one node; a restart forgets it); svcd nodes sharing
 * a database would each count on their own until an adapter keeps these records in the database.
 */
export interface LoginThrottleStore {
  /** Keyed by address. */
  addresses: ExpiringRecords<AddressFailures>;
  /** Keyed by `userAtAddressKey`. */
  userAtAddress: ExpiringRecords<UserAtAddress>;
  /** Keyed by username. */
  users: ExpiringRecords<UserGuesses>;
}

export const userAtAddressKey = (username: string, ip: string): string => `${username}\n${ip}`;
