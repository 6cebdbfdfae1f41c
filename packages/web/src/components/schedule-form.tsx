import {
  Button,
  Card,
  Checkbox,
  Group,
  NumberInput,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { libraryScriptsQuery } from '../api/runs.js';
import type { Schedule } from '../api/schedules.js';
import { scheduleBody, type ScheduleForm } from '../lib/schedule-form.js';
import { TargetFields } from '../pages/run-new-page.js';
import { CodeEditor } from './code-editor.js';
import { ErrorAlert } from './error-alert.js';
import { StagedFields } from './staged-fields.js';

const languageOf = (interpreter: string) =>
  /powershell|pwsh/i.test(interpreter) ? 'powershell' : /python/i.test(interpreter) ? 'python' : 'shell';

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
  const library = useQuery({ ...libraryScriptsQuery, enabled: form.source === 'library' });
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
          <Stack gap="sm">
            <SegmentedControl
              aria-label="Run a"
              value={form.source}
              onChange={(value) => set({ source: value })}
              data={[
                { value: 'command', label: 'Command' },
                { value: 'script', label: 'Script' },
                { value: 'library', label: 'Library script' },
              ]}
            />
            {form.source === 'command' && (
              <Textarea
                label="Command"
                placeholder="uptime"
                autosize
                minRows={2}
                ff="monospace"
                required
                value={form.command}
                onChange={(e) => set({ command: e.currentTarget.value })}
              />
            )}
            {form.source === 'script' && (
              <CodeEditor
                label="Script"
                value={form.script}
                onChange={(script) => set({ script })}
                language={languageOf(form.interpreter)}
              />
            )}
            {form.source === 'library' && (
              <>
                {library.error && <ErrorAlert error={library.error} />}
                <Select
                  label="Library script"
                  description="Its text and options are read at each firing"
                  placeholder={library.isLoading ? 'Loading…' : 'Choose a script'}
                  searchable
                  required
                  value={form.scriptId || null}
                  onChange={(value) => set({ scriptId: typeof value === 'string' ? value : '' })}
                  data={(library.data ?? []).map((s) => ({ value: s.id, label: s.name }))}
                  nothingFoundMessage="No library script matches; create one in the script library"
                />
              </>
            )}
            <SimpleGrid cols={{ base: 1, sm: 3 }}>
              <TextInput
                label="Interpreter"
                placeholder="the client's default"
                value={form.interpreter}
                onChange={(e) => set({ interpreter: e.currentTarget.value })}
              />
              <TextInput
                label="Working directory"
                placeholder="where the agent runs"
                value={form.cwd}
                onChange={(e) => set({ cwd: e.currentTarget.value })}
              />
              <NumberInput
                label="Timeout (s)"
                placeholder={form.source === 'library' ? "the script's own" : '60'}
                min={1}
                value={form.timeoutSec}
                onChange={(timeoutSec) => set({ timeoutSec })}
              />
            </SimpleGrid>
            <Group>
              <Switch
                label="On all clients at once (concurrent)"
                checked={form.concurrent}
                onChange={(e) => set({ concurrent: e.currentTarget.checked })}
              />
              <Checkbox
                label="Stop at the first failure (sequential only)"
                checked={form.abortOnError}
                disabled={form.concurrent}
                onChange={(e) => set({ abortOnError: e.currentTarget.checked })}
              />
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
            </Group>
            <StagedFields
              value={form.staged}
              set={(next) => setForm((f) => ({ ...f, staged: { ...f.staged, ...next } }))}
            />
          </Stack>
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
