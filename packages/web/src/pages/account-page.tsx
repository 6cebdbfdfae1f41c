import {
  Alert,
  Badge,
  Button,
  Card,
  Group,
  PasswordInput,
  Stack,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { ApiError } from '../api/api-error.js';
import { adminApi, meQuery, type Me, type WriteOutcome } from '../api/admin.js';
import { ConfirmModal } from '../components/confirm-modal.js';
import { ErrorAlert } from '../components/error-alert.js';
import { TotpEnrolment } from '../components/totp-enrolment.js';
import { WriteOutcomeAlert } from '../components/write-outcome.js';
import { passwordProblem } from '../lib/secrets.js';

function PasswordCard() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirm, setConfirm] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [outcome, setOutcome] = useState<WriteOutcome>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setOutcome(undefined);
    const problem = passwordProblem(next, confirm);
    if (problem) {
      setError(new Error(problem));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      setOutcome(await adminApi.updateMe({ password: next, old_password: current }));
      setCurrent('');
      setNext('');
      setConfirm('');
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card withBorder padding="lg">
      <Title order={2} size="h4" mb="sm">
        Password
      </Title>
      <form onSubmit={(e) => void submit(e)}>
        <Stack maw={420}>
          <PasswordInput
            label="Current password"
            required
            autoComplete="current-password"
            value={current}
            onChange={(e) => setCurrent(e.currentTarget.value)}
          />
          <PasswordInput
            label="New password"
            description="8 to 72 bytes."
            required
            autoComplete="new-password"
            value={next}
            onChange={(e) => setNext(e.currentTarget.value)}
          />
          <PasswordInput
            label="Repeat the new password"
            required
            autoComplete="new-password"
            value={confirm}
            onChange={(e) => setConfirm(e.currentTarget.value)}
          />
          {error !== undefined && (
            <ErrorAlert
              error={error}
              {...(error instanceof ApiError && error.status === 403
                ? { title: 'The current password is not right' }
                : {})}
            />
          )}
          <WriteOutcomeAlert outcome={outcome} done="Password changed." />
          <Group>
            <Button type="submit" loading={busy}>
              Change password
            </Button>
          </Group>
        </Stack>
      </form>
    </Card>
  );
}

function TwoFaAddressCard({ me }: { me: Me }) {
  const queryClient = useQueryClient();
  const [sendTo, setSendTo] = useState(me.two_fa_send_to);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [outcome, setOutcome] = useState<WriteOutcome>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setOutcome(undefined);
    try {
      setOutcome(await adminApi.updateMe({ two_fa_send_to: sendTo.trim() }));
      await queryClient.invalidateQueries({ queryKey: ['me'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card withBorder padding="lg">
      <Title order={2} size="h4" mb="sm">
        Two-factor login
      </Title>
      <Text size="sm" mb="sm">
        {me.two_fa_enabled
          ? me.totp_enabled
            ? 'Logins ask for a code from your authenticator app (below).'
            : 'Logins ask for a code that svcd sends to the address below.'
          : 'Two-factor login is off on this server; the address is used once an administrator turns it on.'}
      </Text>
      {!me.totp_enabled && (
        <form onSubmit={(e) => void submit(e)}>
          <Stack maw={420}>
            <TextInput
              label="Send codes to"
              description="An e-mail address or Pushover user key, as svcd’s delivery expects."
              value={sendTo}
              onChange={(e) => setSendTo(e.currentTarget.value)}
            />
            {error !== undefined && <ErrorAlert error={error} />}
            <WriteOutcomeAlert outcome={outcome} done="Two-factor address saved." />
            <Group>
              <Button type="submit" loading={busy}>
                Save address
              </Button>
            </Group>
          </Stack>
        </form>
      )}
    </Card>
  );
}

/** The authenticator-app secret: set one up (QR code once created), show it again, or delete it. */
function TotpCard() {
  const queryClient = useQueryClient();
  const secret = useQuery({
    queryKey: ['totp-secret'],
    queryFn: async () => {
      try {
        await adminApi.totpSecret();
        return true;
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return false;
        throw err;
      }
    },
  });
  const [shown, setShown] = useState<{ secret: string; qr: string }>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [deleting, setDeleting] = useState(false);
  const run = async (action: () => Promise<{ secret: string; qr: string }>) => {
    setBusy(true);
    setError(undefined);
    try {
      setShown(await action());
      await queryClient.invalidateQueries({ queryKey: ['totp-secret'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card withBorder padding="lg">
      <Group justify="space-between" mb="sm">
        <Title order={2} size="h4">
          Authenticator app
        </Title>
        {secret.data !== undefined && (
          <Badge color={secret.data ? 'teal.9' : 'gray.7'} data-testid="totp-state">
            {secret.data ? 'set up' : 'not set up'}
          </Badge>
        )}
      </Group>
      <Stack maw={420}>
        {secret.error && <ErrorAlert error={secret.error} />}
        {secret.data === false && (
          <>
            <Text size="sm">
              Your next login asks you to set up an app. Set it up now: scan the QR code with the app.
            </Text>
            <Group>
              <Button loading={busy} onClick={() => void run(adminApi.createTotpSecret)}>
                Set up an authenticator app
              </Button>
            </Group>
          </>
        )}
        {shown && (
          <>
            <Alert color="yellow" title="Scan this code with your authenticator app">
              Or type the secret under it. Anyone who sees it can create your codes: close it when done.
            </Alert>
            <TotpEnrolment secret={shown.secret} qr={shown.qr} />
            <Group>
              <Button variant="default" onClick={() => setShown(undefined)}>
                Hide the code
              </Button>
            </Group>
          </>
        )}
        {secret.data === true && !shown && (
          <Group>
            <Button variant="default" loading={busy} onClick={() => void run(adminApi.totpSecret)}>
              Show the QR code again
            </Button>
            <Button color="red" variant="light" onClick={() => setDeleting(true)}>
              Delete the secret
            </Button>
          </Group>
        )}
        {error !== undefined && <ErrorAlert error={error} />}
      </Stack>
      <ConfirmModal
        opened={deleting}
        title="Delete your authenticator-app secret?"
        confirmLabel="Delete secret"
        onClose={() => setDeleting(false)}
        onConfirm={async () => {
          await adminApi.deleteTotpSecret();
          setShown(undefined);
          await queryClient.invalidateQueries({ queryKey: ['totp-secret'] });
        }}
      >
        The codes of your current app stop working. Set up a new app here or at your next login.
      </ConfirmModal>
    </Card>
  );
}

export function AccountPage() {
  const me = useQuery(meQuery);
  return (
    <Stack>
      <Title order={1} size="h2">
        My account
      </Title>
      {me.error && <ErrorAlert error={me.error} />}
      {me.data && (
        <>
          <Group gap="xs">
            <Text fw={500} data-testid="account-username">
              {me.data.username}
            </Text>
            {me.data.groups.map((group) => (
              <Badge key={group} variant="light" tt="none" size="sm">
                {group}
              </Badge>
            ))}
            {me.data.groups.length === 0 && (
              <Text size="sm" c="dimmed">
                in no group
              </Text>
            )}
          </Group>
          <PasswordCard />
          <TwoFaAddressCard key={me.data.two_fa_send_to} me={me.data} />
          {me.data.totp_enabled && <TotpCard />}
        </>
      )}
    </Stack>
  );
}
