import { useSyncExternalStore } from 'react';
import { session, type Session } from './session.js';

export function useSession(): Session | undefined {
  return useSyncExternalStore(session.subscribe, session.get);
}
