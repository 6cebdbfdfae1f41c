import { Alert, Button, Group, Text } from '@mantine/core';
import { useCallback, useEffect, useState } from 'react';
import { formatDuration } from '../lib/format.js';
import { renewalTime, renewSession } from '../session/renewal.js';
import { session } from '../session/session.js';
import { useSession } from '../session/use-session.js';
import { ErrorAlert } from './error-alert.js';

/** After a failed renewal (e.g. svcd briefly unreachable), the next try comes this much later. */
const RETRY_MS = 10_000;

/**
 * Keeps the session alive while the console is open: two minutes before the token ends it is traded for a
 * fresh one (POST /me/token-renewal), silently. If that fails, the operator sees why and may retry; when the
 * token ends anyway, the login page brings them back to this page.
 */
export function SessionRenewal() {
  const current = useSession();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [now, setNow] = useState(Date.now());

  const renew = useCallback(async () => {
    setBusy(true);
    try {
      await renewSession();
      setError(undefined);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }, []);

  // One timer to the renewal time of the current token (a new token re-arms it), then retries after failures.
  useEffect(() => {
    if (!current) return;
    const due = error === undefined ? renewalTime(current) : Date.now() + RETRY_MS;
    const timer = setTimeout(() => void renew(), Math.max(0, due - Date.now()));
    return () => clearTimeout(timer);
  }, [current, error, renew]);

  // The end of the token, whatever happened to the renewal.
  useEffect(() => {
    if (!current) return;
    const timer = setTimeout(() => session.end('expired'), Math.max(0, current.expiresAt - Date.now()));
    return () => clearTimeout(timer);
  }, [current]);

  // The countdown is shown only while a renewal is failing.
  useEffect(() => {
    if (error === undefined) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [error]);

  if (!current || error === undefined) return null;
  return (
    <Alert color="yellow" title="The session could not be renewed" mb="md" data-testid="renewal-failed">
      <Text size="sm" mb="xs">
        It ends in {formatDuration(Math.max(0, current.expiresAt - now))}; the console tries again every{' '}
        {RETRY_MS / 1000} s.
      </Text>
      <ErrorAlert error={error} />
      <Group mt="xs">
        <Button size="xs" loading={busy} onClick={() => void renew()}>
          Try again now
        </Button>
      </Group>
    </Alert>
  );
}
