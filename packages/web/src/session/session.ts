/**
 * The logged-in session: the Bearer token, whose it is and when it ends.
 *
 * Kept in memory and mirrored to sessionStorage (never localStorage): a reload of the tab keeps the operator
 * logged in, while the token still dies with the tab and is never shared with other tabs or written to disk by
 * the page beyond the browser's own session store. The strict CSP (no inline or foreign script) is what keeps
 * other code from reading either copy.
 */
export interface Session {
  token: string;
  username: string;
  /** Epoch milliseconds, from the token's `exp`. */
  expiresAt: number;
  /** Epoch milliseconds, from the token's `iat`: with `expiresAt`, the lifetime a renewal keeps. */
  issuedAt?: number;
}

/** Why the last session ended; the login page says so. */
export type EndReason = 'logout' | 'expired';

const STORAGE_KEY = 'svc.session';

let current: Session | undefined = readStored();
let lastEnd: EndReason | undefined;
const listeners = new Set<() => void>();

function readStored(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return undefined;
    const parsed = JSON.parse(raw) as Session;
    return parsed.expiresAt > Date.now() ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function changed(): void {
  for (const listener of listeners) listener();
}

export const session = {
  get: (): Session | undefined => current,
  lastEnd: (): EndReason | undefined => lastEnd,
  start: (next: Session): void => {
    current = next;
    lastEnd = undefined;
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
    changed();
  },
  end: (reason: EndReason): void => {
    if (!current) return;
    current = undefined;
    lastEnd = reason;
    sessionStorage.removeItem(STORAGE_KEY);
    changed();
  },
  subscribe: (listener: () => void): (() => void) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};
