import { Button, Group, Stack } from '@mantine/core';
import { useState, type FormEvent, type ReactNode } from 'react';
import { ErrorAlert } from './error-alert.js';

/**
 * The body of a create or edit dialog (users, API tokens, client credentials, user groups): the fields, the
 * failure with the API's title and detail, and the submit button. `submit` throws to show why it failed. With
 * `shownOnce`, what the submit answered replaces the form (a secret shown once) until Done calls `onDone`; the
 * answer lives only in this component, so closing the dialog drops it.
 */
export function FormDialog<T>({
  submitLabel,
  submit,
  children,
  shownOnce,
  onDone,
}: {
  submitLabel: string;
  submit: () => Promise<T>;
  children: ReactNode;
  shownOnce?: (answer: T) => ReactNode;
  onDone?: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [answer, setAnswer] = useState<{ value: T }>();
  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const value = await submit();
      if (shownOnce) setAnswer({ value });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  if (answer && shownOnce)
    return (
      <Stack>
        {shownOnce(answer.value)}
        <Group justify="flex-end">
          <Button onClick={onDone}>Done</Button>
        </Group>
      </Stack>
    );
  return (
    <form onSubmit={(e) => void onSubmit(e)}>
      <Stack>
        {children}
        {error !== undefined && <ErrorAlert error={error} />}
        <Group justify="flex-end">
          <Button type="submit" loading={busy}>
            {submitLabel}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
