import {
  Alert,
  Button,
  Group,
  Loader,
  Modal,
  NumberInput,
  Stack,
  Switch,
  TagsInput,
  Text,
  TextInput,
  Title,
  Autocomplete,
} from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getRouteApi, useNavigate, useRouter } from '@tanstack/react-router';
import { useState, type FormEvent } from 'react';
import { apiRequest } from '../api/client.js';
import {
  languageOfInterpreter,
  libraryScriptQuery,
  type LibraryScript,
  type LibraryScriptBody,
} from '../api/library-queries.js';
import { CodeEditor } from '../components/code-editor.js';
import { ErrorAlert } from '../components/error-alert.js';
import { AnchorLink } from '../components/links.js';
import { TimeAgo } from '../components/time-ago.js';
import { useAllows } from '../session/use-rights.js';

const scriptRoute = getRouteApi('/console/library/$scriptId');

const EMPTY: LibraryScriptBody = {
  name: '',
  script: '',
  interpreter: '',
  is_sudo: false,
  cwd: '',
  tags: [],
  timeout_sec: 60,
};

const INTERPRETERS = ['/bin/bash', '/bin/sh', 'powershell', 'pwsh', 'python3', 'cmd.exe'];

function ScriptForm({
  initial,
  submitLabel,
  onSubmit,
  pending,
  readOnly = false,
}: {
  initial: LibraryScriptBody;
  submitLabel: string;
  /** Without the `library` permission: shown, not saved. */
  readOnly?: boolean;
  onSubmit: (body: LibraryScriptBody) => void;
  pending: boolean;
}) {
  const [form, setForm] = useState(initial);
  const set = (next: Partial<LibraryScriptBody>) => setForm((prev) => ({ ...prev, ...next }));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSubmit({ ...form, name: form.name.trim() });
  };
  return (
    <form onSubmit={submit} aria-label="Script">
      <Stack>
        <TextInput
          label="Name"
          required
          value={form.name}
          onChange={(e) => set({ name: e.currentTarget.value })}
        />
        <Group grow align="start" wrap="wrap">
          <Autocomplete
            label="Interpreter"
            description="Empty: the client's default (sh on Linux and macOS, cmd.exe on Windows)"
            data={INTERPRETERS}
            value={form.interpreter}
            onChange={(interpreter) => set({ interpreter })}
          />
          <TextInput
            label="Working directory"
            description="Empty: where the agent runs"
            value={form.cwd}
            onChange={(e) => set({ cwd: e.currentTarget.value })}
          />
        </Group>
        <Group grow align="start" wrap="wrap">
          <TagsInput
            label="Tags"
            description="Press Enter after each tag"
            value={form.tags ?? []}
            onChange={(tags) => set({ tags })}
          />
          <NumberInput
            label="Timeout (seconds)"
            description="How long a run of this script may take"
            min={1}
            max={31 * 86_400}
            value={form.timeout_sec ?? 60}
            onChange={(value) => set({ timeout_sec: typeof value === 'number' ? value : 60 })}
          />
        </Group>
        <Switch
          label="Run with sudo"
          checked={form.is_sudo ?? false}
          onChange={(e) => set({ is_sudo: e.currentTarget.checked })}
        />
        <CodeEditor
          label="Script"
          value={form.script}
          onChange={(script) => set({ script })}
          language={languageOfInterpreter(form.interpreter ?? '')}
          minRows={14}
        />
        {!readOnly && (
          <Group>
            <Button type="submit" loading={pending}>
              {submitLabel}
            </Button>
          </Group>
        )}
      </Stack>
    </form>
  );
}

const bodyOf = (script: LibraryScript): LibraryScriptBody => ({
  name: script.name,
  script: script.script,
  interpreter: script.interpreter,
  is_sudo: script.is_sudo,
  cwd: script.cwd,
  tags: script.tags,
  timeout_sec: script.timeout_sec,
});

/** A new library script. */
export function NewLibraryScriptPage() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: (body: LibraryScriptBody) =>
      apiRequest<{ data: LibraryScript }>('/library/scripts', { method: 'POST', body }).then((r) => r.data),
    onSuccess: async (script) => {
      await queryClient.invalidateQueries({ queryKey: ['library'] });
      await navigate({ to: '/library/$scriptId', params: { scriptId: script.id } });
    },
  });
  return (
    <Stack>
      <AnchorLink to="/library">← Script library</AnchorLink>
      <Title order={1}>New script</Title>
      {create.error && <ErrorAlert error={create.error} title="The script was not saved" />}
      <ScriptForm
        initial={EMPTY}
        submitLabel="Save script"
        onSubmit={create.mutate}
        pending={create.isPending}
      />
    </Stack>
  );
}

function DeleteScript({ script }: { script: LibraryScript }) {
  const [open, setOpen] = useState(false);
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () =>
      apiRequest<void>(`/library/scripts/${encodeURIComponent(script.id)}`, { method: 'DELETE' }),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: ['library-script', script.id] });
      await queryClient.invalidateQueries({ queryKey: ['library'] });
      await navigate({ to: '/library' });
    },
  });
  return (
    <>
      <Button color="red" variant="light" onClick={() => setOpen(true)}>
        Delete
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={`Delete "${script.name}"?`}>
        <Stack>
          <Text>The script leaves the library for everyone. Runs already made keep their output.</Text>
          {remove.error && <ErrorAlert error={remove.error} title="The script was not deleted" />}
          <Group justify="end">
            <Button variant="default" onClick={() => setOpen(false)}>
              Cancel
            </Button>
            <Button color="red" loading={remove.isPending} onClick={() => remove.mutate()}>
              Delete script
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}

/** The run page belongs to another area of the console; the link is a plain path with the script's id. */
function RunLink({ id }: { id: string }) {
  const router = useRouter();
  const href = `/runs/new?script_id=${encodeURIComponent(id)}`;
  return (
    <Button
      component="a"
      href={href}
      onClick={(event) => {
        event.preventDefault();
        router.history.push(href);
      }}
    >
      Run
    </Button>
  );
}

/** One library script: edit it (highlighted editor), run it, delete it. */
export function LibraryScriptPage() {
  const { scriptId } = scriptRoute.useParams();
  const queryClient = useQueryClient();
  const script = useQuery(libraryScriptQuery(scriptId));
  const mayEdit = useAllows('library');
  const mayRun = useAllows('scripts');
  const [saved, setSaved] = useState(false);
  const save = useMutation({
    mutationFn: (body: LibraryScriptBody) =>
      apiRequest<{ data: LibraryScript }>(`/library/scripts/${encodeURIComponent(scriptId)}`, {
        method: 'PUT',
        body,
      }).then((r) => r.data),
    onMutate: () => setSaved(false),
    onSuccess: async (updated) => {
      queryClient.setQueryData(libraryScriptQuery(scriptId).queryKey, updated);
      await queryClient.invalidateQueries({ queryKey: ['library'] });
      setSaved(true);
    },
  });
  const data = script.data;
  return (
    <Stack>
      <AnchorLink to="/library">← Script library</AnchorLink>
      <Group justify="space-between" align="end">
        <Title order={1}>{data?.name ?? 'Script'}</Title>
        {data && (
          <Group>
            {mayRun && <RunLink id={data.id} />}
            {mayEdit && <DeleteScript script={data} />}
          </Group>
        )}
      </Group>
      {script.isPending && <Loader role="status" aria-label="Loading the script" />}
      {script.error && <ErrorAlert error={script.error} />}
      {data && (
        <Text size="sm" c="dimmed">
          Created by {data.created_by} <TimeAgo iso={data.created_at} />, last changed by {data.updated_by}{' '}
          <TimeAgo iso={data.updated_at} />
        </Text>
      )}
      {saved && (
        <Alert color="green" title="Saved" withCloseButton onClose={() => setSaved(false)}>
          The script is saved; runs by its id use this version from now on.
        </Alert>
      )}
      {save.error && <ErrorAlert error={save.error} title="The script was not saved" />}
      {data && (
        <ScriptForm
          key={data.id}
          initial={bodyOf(data)}
          submitLabel="Save changes"
          onSubmit={save.mutate}
          pending={save.isPending}
          readOnly={!mayEdit}
        />
      )}
    </Stack>
  );
}
