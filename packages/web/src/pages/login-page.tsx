import {
  Alert,
  Anchor,
  Button,
  Center,
  Paper,
  PasswordInput,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useRouter, useSearch } from '@tanstack/react-router';
import { useEffect, useState, type FormEvent } from 'react';
import { ERROR_CODES } from '@svc/protocol';
import { ApiError, secondsLeft } from '../api/api-error.js';
import { Logo } from '../components/logo.js';
import { TotpEnrolment } from '../components/totp-enrolment.js';
import { passwordLogin, totpEnrolment, verifySecondFactor, type LoginStep } from '../session/login.js';
import { session } from '../session/session.js';

type SecondStep = Extract<LoginStep, { kind: 'second-factor' }>;

/** What the operator should read for a failed step: wrong password, ban with seconds left, bad code. */
function loginMessage(error: unknown): { title: string; detail: string; seconds?: number | undefined } {
  if (!(error instanceof ApiError)) return { title: 'Login failed', detail: String(error) };
  switch (error.code) {
    case ERROR_CODES.badCredentials:
      return { title: 'Wrong username or password', detail: 'Check both and try again.' };
    case ERROR_CODES.ipBanned:
    case ERROR_CODES.loginThrottled:
      return { title: error.title, detail: error.detail, seconds: secondsLeft(error) };
    default:
      return { title: error.title, detail: error.detail };
  }
}

function LoginError({ error }: { error: unknown }) {
  const message = loginMessage(error);
  const [left, setLeft] = useState(message.seconds);
  useEffect(() => {
    setLeft(message.seconds);
    if (message.seconds === undefined) return;
    const timer = setInterval(() => setLeft((s) => (s === undefined || s <= 1 ? 0 : s - 1)), 1000);
    return () => clearInterval(timer);
  }, [message.seconds]);
  return (
    <Alert color="red" title={message.title} role="alert" data-testid="login-error">
      {left !== undefined ? `Try again in ${left} s.` : message.detail}
    </Alert>
  );
}

function PasswordStep({ onSecondStep }: { onSecondStep: (step: SecondStep) => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const step = await passwordLogin(username, password);
      if (step.kind === 'second-factor') onSecondStep(step);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={(e) => void submit(e)}>
      <Stack>
        <TextInput
          label="Username"
          autoComplete="username"
          required
          autoFocus
          value={username}
          onChange={(e) => setUsername(e.currentTarget.value)}
        />
        <PasswordInput
          label="Password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(e) => setPassword(e.currentTarget.value)}
        />
        {error !== undefined && <LoginError error={error} />}
        <Button type="submit" loading={busy} fullWidth>
          Log in
        </Button>
      </Stack>
    </form>
  );
}

function SecondFactorStep({ step, onRestart }: { step: SecondStep; onRestart: () => void }) {
  const [code, setCode] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [enrolment, setEnrolment] = useState<{ secret: string; qr: string }>();
  const app = step.twoFa.totp_key_status !== '';
  const pending = step.twoFa.totp_key_status === 'pending';
  useEffect(() => {
    if (pending) totpEnrolment(step.loginToken).then(setEnrolment, setError);
  }, [pending, step.loginToken]);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await verifySecondFactor(step, code);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={(e) => void submit(e)}>
      <Stack>
        <Text size="sm">
          {app
            ? pending
              ? 'Set up your authenticator app: scan the code (or type the secret), then enter the code it shows.'
              : 'Enter the code your authenticator app shows.'
            : `A code was sent by ${step.twoFa.delivery_method} to ${step.twoFa.send_to}. Enter it here.`}
        </Text>
        {enrolment && <TotpEnrolment secret={enrolment.secret} qr={enrolment.qr} />}
        <TextInput
          label={app ? 'Authenticator code' : 'Code'}
          autoComplete="one-time-code"
          inputMode={app ? 'numeric' : 'text'}
          required
          autoFocus
          value={code}
          onChange={(e) => setCode(e.currentTarget.value)}
        />
        {error !== undefined && <LoginError error={error} />}
        <Button type="submit" loading={busy} fullWidth>
          Verify
        </Button>
        <Anchor component="button" type="button" size="sm" onClick={onRestart}>
          Start over
        </Anchor>
      </Stack>
    </form>
  );
}

export function LoginPage() {
  const search = useSearch({ from: '/login' });
  const router = useRouter();
  const [second, setSecond] = useState<SecondStep>();
  const [ended] = useState(session.lastEnd);
  useEffect(
    () =>
      session.subscribe(() => {
        if (session.get()) router.history.replace(search.redirect ?? '/');
      }),
    [router, search.redirect],
  );
  return (
    <Center mih="100dvh" p="md">
      <Paper withBorder shadow="sm" p="xl" w="100%" maw={400} component="main">
        <Stack>
          <Logo />
          <Title order={1} size="h3">
            Log in to svc
          </Title>
          {ended === 'expired' && (
            <Alert color="yellow" title="Your session has expired" data-testid="session-expired">
              Log in again to return to the page you were on.
            </Alert>
          )}
          {second ? (
            <SecondFactorStep step={second} onRestart={() => setSecond(undefined)} />
          ) : (
            <PasswordStep onSecondStep={setSecond} />
          )}
        </Stack>
      </Paper>
    </Center>
  );
}
