import {
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
} from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { libraryScriptsQuery } from '../api/runs.js';
import type { RunWhat, ScriptSource } from '../lib/run-compose.js';
import { CodeEditor } from './code-editor.js';
import { ErrorAlert } from './error-alert.js';
import { StagedFields } from './staged-fields.js';

/** What a run can start from. */
export const RUN_SOURCES: readonly { value: ScriptSource; label: string }[] = [
  { value: 'command', label: 'Command' },
  { value: 'script', label: 'Script' },
  { value: 'library', label: 'Library script' },
];

const languageOf = (interpreter: string) =>
  /powershell|pwsh/i.test(interpreter) ? 'powershell' : /python/i.test(interpreter) ? 'python' : 'shell';

/**
 * What to run and how, in the run form (/runs/new) and the schedule form: a command, a typed script or a library
 * script; interpreter, working directory and timeout; concurrency and stop at the first failure (plus the
 * form's own switches in `switches`); the batch fields.
 */
export function RunOptionsFields({
  value,
  set,
  commandPlaceholder,
  libraryDescription,
  timeoutPlaceholder,
  showLibraryText = false,
  switches,
  sources = RUN_SOURCES,
}: {
  value: RunWhat;
  set: (next: Partial<RunWhat>) => void;
  commandPlaceholder: string;
  libraryDescription?: string;
  timeoutPlaceholder?: string;
  /** Show the chosen library script's text under the choice (read-only). */
  showLibraryText?: boolean;
  switches?: ReactNode;
  /** The sources offered (those the user may start); all by default. */
  sources?: readonly { value: ScriptSource; label: string }[];
}) {
  const library = useQuery({ ...libraryScriptsQuery, enabled: value.source === 'library' });
  const chosen = showLibraryText ? library.data?.find((s) => s.id === value.scriptId) : undefined;
  return (
    <Stack gap="sm">
      <SegmentedControl
        aria-label="Run a"
        value={value.source}
        onChange={(source) => set({ source })}
        data={[...sources]}
      />
      {value.source === 'command' && (
        <Textarea
          label="Command"
          placeholder={commandPlaceholder}
          autosize
          minRows={2}
          ff="monospace"
          required
          value={value.command}
          onChange={(e) => set({ command: e.currentTarget.value })}
        />
      )}
      {value.source === 'script' && (
        <CodeEditor
          label="Script"
          value={value.script}
          onChange={(script) => set({ script })}
          language={languageOf(value.interpreter)}
        />
      )}
      {value.source === 'library' && (
        <>
          {library.error && <ErrorAlert error={library.error} />}
          <Select
            label="Library script"
            description={libraryDescription}
            placeholder={library.isLoading ? 'Loading…' : 'Choose a script'}
            searchable
            required
            value={value.scriptId || null}
            onChange={(scriptId) => set({ scriptId: typeof scriptId === 'string' ? scriptId : '' })}
            data={(library.data ?? []).map((s) => ({ value: s.id, label: s.name }))}
            nothingFoundMessage="No library script matches; create one in the script library"
          />
          {chosen && (
            <Textarea label="Its text" value={chosen.script} readOnly autosize maxRows={10} ff="monospace" />
          )}
        </>
      )}
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <TextInput
          label="Interpreter"
          placeholder="the client's default"
          value={value.interpreter}
          onChange={(e) => set({ interpreter: e.currentTarget.value })}
        />
        <TextInput
          label="Working directory"
          placeholder="where the agent runs"
          value={value.cwd}
          onChange={(e) => set({ cwd: e.currentTarget.value })}
        />
        <NumberInput
          label="Timeout (s)"
          placeholder={timeoutPlaceholder}
          min={1}
          value={value.timeoutSec}
          onChange={(timeoutSec) => set({ timeoutSec })}
        />
      </SimpleGrid>
      <Group>
        <Switch
          label="On all clients at once (concurrent)"
          checked={value.concurrent}
          onChange={(e) => set({ concurrent: e.currentTarget.checked })}
        />
        <Checkbox
          label="Stop at the first failure (sequential only)"
          checked={value.abortOnError}
          disabled={value.concurrent}
          onChange={(e) => set({ abortOnError: e.currentTarget.checked })}
        />
        {switches}
      </Group>
      <StagedFields value={value.staged} set={(next) => set({ staged: { ...value.staged, ...next } })} />
    </Stack>
  );
}
