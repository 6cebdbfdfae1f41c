import { useEffect, useRef, useState } from 'react';
import { session } from '../session/session.js';
import { followRun, followSocketUrl } from './command-socket.js';
import { applyLiveMessages, type LiveMessage } from './run-follow.js';
import type { ChildJob } from './run-jobs.js';

/** How often the messages received are applied to the page (one render per batch). */
const FLUSH_MS = 200;

/**
 * `live`: the socket follows the run; `done`: svcd sent everything and closed; `failed`: the socket could not
 * follow (the page falls back to polling for this run); `off`: nothing to follow.
 */
export type FollowState = 'off' | 'live' | 'done' | 'failed';

const EMPTY: ReadonlyMap<string, ChildJob> = new Map();

/**
 * Follows a running run over `/api/v1/ws/commands/{jid}` while `running`: its rows as the socket reports them,
 * applied every FLUSH_MS. `onEnd` is called when the socket closes (done or failed), to read the run again.
 */
export function useRunFollow(
  jid: string,
  running: boolean,
  onEnd: () => void,
): { live: ReadonlyMap<string, ChildJob>; state: FollowState } {
  const [live, setLive] = useState(EMPTY);
  const [follow, setFollow] = useState<{ jid: string; state: FollowState }>({ jid, state: 'off' });
  const endRef = useRef(onEnd);
  endRef.current = onEnd;
  const state = follow.jid === jid ? follow.state : 'off';
  const settled = state === 'done' || state === 'failed';

  useEffect(() => {
    if (!running || settled) return;
    const token = session.get()?.token;
    if (!token) return;
    let pending: LiveMessage[] = [];
    let left = false;
    const flush = () => {
      if (pending.length === 0) return;
      const batch = pending;
      pending = [];
      setLive((current) => applyLiveMessages(current, batch));
    };
    const timer = setInterval(flush, FLUSH_MS);
    setLive(EMPTY);
    setFollow({ jid, state: 'live' });
    const stop = followRun(followSocketUrl(window.location, jid, token), {
      onChunk: (chunk) => pending.push({ chunk }),
      onFinal: (final) => pending.push({ final }),
      onError: () => undefined,
      onClose: (complete) => {
        clearInterval(timer);
        if (left) return;
        flush();
        setFollow({ jid, state: complete ? 'done' : 'failed' });
        endRef.current();
      },
    });
    return () => {
      left = true;
      clearInterval(timer);
      stop();
    };
  }, [jid, running, settled]);

  return { live: follow.jid === jid ? live : EMPTY, state };
}
