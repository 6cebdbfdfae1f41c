import { Alert, Button, Group, List, Progress, Stack, Text } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useRouter } from '@tanstack/react-router';
import { useState } from 'react';
import { ApiError } from '../api/api-error.js';
import { forgetClient } from '../api/fleet.js';
import { matchingClients, runLinkFor, type ClientRef } from '../lib/bulk.js';
import type { ClientSearch } from '../lib/client-filters.js';
import { useAllows, useAllowsAny } from '../session/use-rights.js';
import { ErrorAlert } from './error-alert.js';

export type Selection =
  { all: true } | { all: false; rows: ReadonlyMap<string, ClientRef['connection_state']> };

interface Removal {
  done: number;
  total: number;
  removed: number;
  skipped: number;
  failures: { id: string; reason: string }[];
  finished: boolean;
}

const reasonOf = (err: unknown): string =>
  err instanceof ApiError
    ? [err.title, err.detail].filter(Boolean).join(': ')
    : err instanceof Error
      ? err.message
      : String(err);

/** Actions on the selected clients, or on every client the filter matches. */
export function BulkActions({
  search,
  selection,
  count,
  clear,
}: {
  search: ClientSearch;
  selection: Selection;
  /** How many clients the selection stands for. */
  count: number;
  clear: () => void;
}) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const mayRun = useAllowsAny('commands', 'scripts');
  const mayForget = useAllows('clients');
  const [busy, setBusy] = useState<'run' | 'remove'>();
  const [error, setError] = useState<unknown>();
  const [removal, setRemoval] = useState<Removal>();
  const [confirming, setConfirming] = useState(false);

  const run = async () => {
    setBusy('run');
    setError(undefined);
    try {
      const link = await runLinkFor(selection.all ? { search } : { ids: [...selection.rows.keys()] });
      router.history.push(link);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(undefined);
    }
  };

  const remove = async () => {
    setConfirming(false);
    setBusy('remove');
    setError(undefined);
    try {
      const chosen: ClientRef[] = selection.all
        ? await matchingClients(search)
        : [...selection.rows].map(([id, state]) => ({ id, connection_state: state }));
      const gone = chosen.filter((c) => c.connection_state === 'disconnected');
      const state: Removal = {
        done: 0,
        total: gone.length,
        removed: 0,
        skipped: chosen.length - gone.length,
        failures: [],
        finished: false,
      };
      setRemoval({ ...state });
      for (const client of gone) {
        try {
          await forgetClient(client.id);
          state.removed += 1;
        } catch (err) {
          state.failures.push({ id: client.id, reason: reasonOf(err) });
        }
        state.done += 1;
        setRemoval({ ...state, failures: [...state.failures] });
      }
      setRemoval({ ...state, failures: [...state.failures], finished: true });
      clear();
      await queryClient.invalidateQueries({ queryKey: ['clients'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <Stack gap="xs">
      {count > 0 && (
        <Group gap="sm" data-testid="bulk-actions">
          <Text size="sm" fw={600}>
            {count} {count === 1 ? 'client' : 'clients'} selected
          </Text>
          {mayRun && (
            <Button size="xs" loading={busy === 'run'} onClick={() => void run()}>
              Run a command or script…
            </Button>
          )}
          {!mayForget ? null : confirming ? (
            <>
              <Text size="sm">Forget the disconnected ones among them? Connected clients are kept.</Text>
              <Button size="xs" color="red" onClick={() => void remove()}>
                Yes, remove them
              </Button>
              <Button size="xs" variant="subtle" onClick={() => setConfirming(false)}>
                Cancel
              </Button>
            </>
          ) : (
            <Button
              size="xs"
              variant="light"
              color="red"
              loading={busy === 'remove'}
              onClick={() => setConfirming(true)}
            >
              Remove disconnected clients
            </Button>
          )}
          <Button size="xs" variant="subtle" onClick={clear}>
            Clear the selection
          </Button>
        </Group>
      )}
      {error !== undefined && <ErrorAlert error={error} title="The action could not start" />}
      {removal && (
        <Alert
          color={removal.failures.length > 0 ? 'red' : 'teal'}
          title={removal.finished ? 'Removal finished' : 'Removing disconnected clients…'}
          role="status"
          data-testid="removal-summary"
          withCloseButton={removal.finished}
          onClose={() => setRemoval(undefined)}
          closeButtonLabel="Dismiss"
        >
          <Progress
            value={removal.total === 0 ? 100 : (removal.done / removal.total) * 100}
            aria-label="Removal progress"
            mb="xs"
          />
          <Text size="sm">
            Removed {removal.removed} of {removal.total} disconnected.
            {removal.skipped > 0 &&
              ` Skipped ${removal.skipped} connected ${removal.skipped === 1 ? 'client' : 'clients'}: only a disconnected client can be forgotten.`}
            {removal.failures.length > 0 && ` ${removal.failures.length} failed:`}
          </Text>
          {removal.failures.length > 0 && (
            <List size="sm">
              {removal.failures.map((f) => (
                <List.Item key={f.id}>
                  {f.id}: {f.reason}
                </List.Item>
              ))}
            </List>
          )}
        </Alert>
      )}
    </Stack>
  );
}
