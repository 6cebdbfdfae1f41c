import { Button, Card, Checkbox, Group, SimpleGrid, Stack, TextInput, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import type { Schedule } from '../api/schedules.js';
import { scheduleBody, type ScheduleForm } from '../lib/schedule-form.js';
import { ErrorAlert } from './error-alert.js';
import { RunOptionsFields } from './run-options-fields.js';
import { TargetFields } from './target-fields.js';

/**
 * Creates or edits a schedule. svcd checks the cron expression and time zone and says which field is wrong; the
 * error is shown above the save button and the next firing on the schedule's page after the save.
 */
export function ScheduleFormCard({
  initial,
  submitLabel,
  save,
  onSaved,
  onCancel,
}: {
  initial: ScheduleForm;
  submitLabel: string;
  save: (body: Record<string, unknown>) => Promise<Schedule>;
  onSaved: (schedule: Schedule) => void;
  onCancel?: () => void;
}) {
  const [form, setForm] = useState(initial);
  const set = (next: Partial<ScheduleForm>) => setForm((f) => ({ ...f, ...next }));
  const mutation = useMutation({ mutationFn: () => save(scheduleBody(form)), onSuccess: onSaved });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    mutation.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="Schedule">
      <Stack>
        <Card withBorder padding="lg">
          <Title order={2} size="h4" mb="sm">
            When
          </Title>
          <SimpleGrid cols={{ base: 1, sm: 3 }}>
            <TextInput
              label="Name"
              required
              value={form.name}
              onChange={(e) => set({ name: e.currentTarget.value })}
            />
            <TextInput
              label="Cron expression"
              description="minute hour day-of-month month day-of-week, or @daily…"
              required
              ff="monospace"
              value={form.cron}
              onChange={(e) => set({ cron: e.currentTarget.value })}
            />
            <TextInput
              label="Time zone"
              description="IANA name; your browser's by default"
              required
              value={form.timezone}
              onChange={(e) => set({ timezone: e.currentTarget.value })}
            />
          </SimpleGrid>
        </Card>
        <Card withBorder padding="lg">
          <Title order={2} size="h4" mb="sm">
            What to run
          </Title>
          <RunOptionsFields
            value={form}
            set={set}
            commandPlaceholder="uptime"
            libraryDescription="Its text and options are read at each firing"
            timeoutPlaceholder={form.source === 'library' ? "the script's own" : '60'}
            switches={
              <>
                <Checkbox
                  label="As root (sudo)"
                  checked={form.isSudo}
                  onChange={(e) => set({ isSudo: e.currentTarget.checked })}
                />
                <Checkbox
                  label="Fire even while the previous run still runs (overlaps)"
                  checked={form.overlaps}
                  onChange={(e) => set({ overlaps: e.currentTarget.checked })}
                />
              </>
            }
          />
        </Card>
        <Card withBorder padding="lg">
          <Title order={2} size="h4" mb="sm">
            Where
          </Title>
          <TargetFields
            targets={form.targets}
            set={(next) => setForm((f) => ({ ...f, targets: { ...f.targets, ...next } }))}
          />
        </Card>
        {mutation.error && <ErrorAlert error={mutation.error} title="The schedule was not saved" />}
        <Group>
          <Button type="submit" loading={mutation.isPending}>
            {submitLabel}
          </Button>
          {onCancel && (
            <Button variant="default" onClick={onCancel}>
              Cancel
            </Button>
          )}
        </Group>
      </Stack>
    </form>
  );
}
