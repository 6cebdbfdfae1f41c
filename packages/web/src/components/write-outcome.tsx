import { Alert } from '@mantine/core';
import type { WriteOutcome } from '../api/admin.js';

/** What a saved change means now: in force, or waiting in svcd's user file for a reload. */
export function WriteOutcomeAlert({ outcome, done }: { outcome: WriteOutcome | undefined; done: string }) {
  if (!outcome) return null;
  return outcome.pending ? (
    <Alert color="yellow" title="Saved, not yet in force" role="status" data-testid="write-outcome">
      {done} svcd keeps users in a file here: the change takes effect {outcome.pending}.
    </Alert>
  ) : (
    <Alert color="teal" title={done} role="status" data-testid="write-outcome" />
  );
}
