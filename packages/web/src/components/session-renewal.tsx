import { Alert, Button, Group, PasswordInput } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { passwordLogin } from '../session/login.js';
import { session } from '../session/session.js';
import { useSession } from '../session/use-session.js';
import { formatDuration } from '../lib/format.js';
import { ErrorAlert } from './error-alert.js';

/** Offered this long before the token ends. */
const WARN_BEFORE_MS = 5 * 60_000;

/**
 * Before the token expires, the operator renews the session with the password without leaving the page (svcd
 * issues tokens only for credentials). When the token ends anyway, the login page brings them back here.
 */
export function SessionRenewal() {
  const current = useSession();
  const [now, setNow] = useState(Date.now());
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  const expired = current !== undefined && current.expiresAt <= now;
  useEffect(() => {
    if (expired) session.end('expired');
  }, [expired]);
  if (!current || expired) return null;
  const left = current.expiresAt - now;
  if (left > WARN_BEFORE_MS) return null;
  const renew = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const step = await passwordLogin(current.username, password);
      // With a second factor the code is asked on the login page, which returns here.
      if (step.kind === 'second-factor') session.end('expired');
      setPassword('');
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Alert color="yellow" title={`Your session ends in ${formatDuration(left)}`} mb="md">
      <form onSubmit={(e) => void renew(e)}>
        <Group align="end">
          <PasswordInput
            label="Password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.currentTarget.value)}
            required
          />
          <Button type="submit" loading={busy}>
            Stay logged in
          </Button>
        </Group>
      </form>
      {error !== undefined && <ErrorAlert error={error} />}
    </Alert>
  );
}
