import {
  Badge,
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
  Text,
  Textarea,
  TextInput,
  Title,
} from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useMutation, useQuery } from '@tanstack/react-query';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { useEffect, useState, type FormEvent } from 'react';
import { clientCount, libraryScriptsQuery, startRun } from '../api/runs.js';
import { CodeEditor } from '../components/code-editor.js';
import { ErrorAlert } from '../components/error-alert.js';
import { StagedFields } from '../components/staged-fields.js';
import {
  initialTargets,
  runRequest,
  targetCountQuery,
  targetingBody,
  type ScriptSource,
  type Targets,
} from '../lib/run-compose.js';
import { noStaging, stagedBody } from '../lib/staged-run.js';
import { useAllows } from '../session/use-rights.js';

const route = getRouteApi('/console/runs/new');

/** What a run can start from; commands need the `commands` permission, the others `scripts`. */
const SOURCES: readonly { value: ScriptSource; label: string }[] = [
  { value: 'command', label: 'Command' },
  { value: 'script', label: 'Script' },
  { value: 'library', label: 'Library script' },
];

const languageOf = (interpreter: string) =>
  /powershell|pwsh/i.test(interpreter) ? 'powershell' : /python/i.test(interpreter) ? 'python' : 'shell';

function TargetCount({ targets }: { targets: Targets }) {
  const [debounced] = useDebouncedValue(targets, 250);
  const query = targetCountQuery(debounced);
  const count = useQuery({
    queryKey: ['run-target-count', query?.toString()],
    queryFn: () => clientCount(query ?? new URLSearchParams()),
    enabled: query !== undefined,
  });
  if (!query)
    return (
      <Text size="sm" c="dimmed">
        Choose the targets to see how many clients match.
      </Text>
    );
  if (count.error) return <ErrorAlert error={count.error} title="Cannot count the matching clients" />;
  return (
    <Group gap="xs" aria-live="polite">
      <Badge size="lg" variant="light" data-testid="target-count">
        {count.data === undefined ? '…' : `${count.data} ${count.data === 1 ? 'client' : 'clients'}`}
      </Badge>
      <Text size="sm" c="dimmed">
        match now{count.isFetching ? ' (counting…)' : ''}; disconnected ones get a failed job.
      </Text>
    </Group>
  );
}

export function TargetFields({ targets, set }: { targets: Targets; set: (next: Partial<Targets>) => void }) {
  return (
    <Stack gap="sm">
      <SegmentedControl
        aria-label="Target clients by"
        value={targets.kind}
        onChange={(kind) => set({ kind: kind })}
        data={[
          { value: 'ids', label: 'Ids / groups' },
          { value: 'tags', label: 'Tags' },
          { value: 'labels', label: 'Labels' },
        ]}
      />
      {targets.kind === 'ids' && (
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput
            label="Client ids"
            description="Comma-separated"
            value={targets.clientIds}
            onChange={(e) => set({ clientIds: e.currentTarget.value })}
          />
          <TextInput
            label="Client group ids"
            description="Comma-separated; their members join the client ids"
            value={targets.groupIds}
            onChange={(e) => set({ groupIds: e.currentTarget.value })}
          />
        </SimpleGrid>
      )}
      {targets.kind !== 'ids' && (
        <Group align="end" wrap="wrap">
          {targets.kind === 'tags' ? (
            <TextInput
              label="Tags"
              description="Comma-separated"
              value={targets.tags}
              onChange={(e) => set({ tags: e.currentTarget.value })}
              miw={240}
            />
          ) : (
            <TextInput
              label="Labels"
              description="Comma-separated key:value"
              value={targets.labels}
              onChange={(e) => set({ labels: e.currentTarget.value })}
              miw={240}
            />
          )}
          <SegmentedControl
            aria-label="Match"
            value={targets.operator}
            onChange={(operator) => set({ operator: operator })}
            data={[
              { value: 'OR', label: 'any (OR)' },
              { value: 'AND', label: 'all (AND)' },
            ]}
          />
        </Group>
      )}
      <TargetCount targets={targets} />
    </Stack>
  );
}

export function RunNewPage() {
  const search = route.useSearch();
  const navigate = useNavigate();
  const mayCommand = useAllows('commands');
  const mayScript = useAllows('scripts');
  const [source, setSource] = useState<ScriptSource>(
    search.script_id ? 'library' : search.command ? 'command' : 'command',
  );
  const sources = SOURCES.filter((s) => (s.value === 'command' ? mayCommand : mayScript));
  const mayStart = sources.some((s) => s.value === source);
  const firstSource = sources[0]?.value;
  useEffect(() => {
    // /me answers after the first render: fall back to what the caller may start.
    if (!mayStart && firstSource) setSource(firstSource);
  }, [mayStart, firstSource]);
  const [command, setCommand] = useState(search.command ?? '');
  const [script, setScript] = useState('#!/bin/sh\n');
  const [scriptId, setScriptId] = useState(search.script_id ?? '');
  const [interpreter, setInterpreter] = useState('');
  const [cwd, setCwd] = useState('');
  const [timeout, setTimeoutSec] = useState<number | string>(60);
  const [concurrent, setConcurrent] = useState(true);
  const [abortOnError, setAbortOnError] = useState(false);
  const [targets, setTargets] = useState(() => initialTargets(search));
  const [staged, setStaged] = useState(noStaging);
  const library = useQuery({ ...libraryScriptsQuery, enabled: source === 'library' });
  const chosen = library.data?.find((s) => s.id === scriptId);

  // A library script brings its own options; the form shows them and sends only what the operator changes.
  useEffect(() => {
    if (!chosen) return;
    setInterpreter(chosen.interpreter);
    setCwd(chosen.cwd);
    setTimeoutSec(chosen.timeout_sec);
  }, [chosen]);

  const start = useMutation({
    mutationFn: () => {
      const targeting = targetingBody(targets);
      if (!targeting) throw new Error('Choose the clients to run on.');
      const request = runRequest(
        source,
        { command, script, scriptId },
        { interpreter, cwd, timeoutSec: Number(timeout) || 60, concurrent, abortOnError },
        targeting,
      );
      return startRun(request.path, { ...request.body, ...stagedBody(staged) });
    },
    onSuccess: (jid) => void navigate({ to: '/runs/$jid', params: { jid } }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate();
  };

  return (
    <Stack>
      <Title order={1} size="h2">
        New run
      </Title>
      <form onSubmit={submit}>
        <Stack>
          <Card withBorder padding="lg">
            <Title order={2} size="h4" mb="sm">
              What to run
            </Title>
            <Stack gap="sm">
              <SegmentedControl
                aria-label="Run a"
                value={source}
                onChange={(value) => setSource(value)}
                data={sources}
              />
              {source === 'command' && (
                <Textarea
                  label="Command"
                  placeholder="uname -a"
                  autosize
                  minRows={2}
                  ff="monospace"
                  required
                  value={command}
                  onChange={(e) => setCommand(e.currentTarget.value)}
                />
              )}
              {source === 'script' && (
                <CodeEditor
                  label="Script"
                  value={script}
                  onChange={setScript}
                  language={languageOf(interpreter)}
                />
              )}
              {source === 'library' && (
                <>
                  {library.error && <ErrorAlert error={library.error} />}
                  <Select
                    label="Library script"
                    placeholder={library.isLoading ? 'Loading…' : 'Choose a script'}
                    searchable
                    required
                    value={scriptId || null}
                    onChange={(value) => setScriptId(typeof value === 'string' ? value : '')}
                    data={(library.data ?? []).map((s) => ({ value: s.id, label: s.name }))}
                    nothingFoundMessage="No library script matches; create one in the script library"
                  />
                  {chosen && (
                    <Textarea
                      label="Its text"
                      value={chosen.script}
                      readOnly
                      autosize
                      maxRows={10}
                      ff="monospace"
                    />
                  )}
                </>
              )}
              <SimpleGrid cols={{ base: 1, sm: 3 }}>
                <TextInput
                  label="Interpreter"
                  placeholder="the client's default"
                  value={interpreter}
                  onChange={(e) => setInterpreter(e.currentTarget.value)}
                />
                <TextInput
                  label="Working directory"
                  placeholder="where the agent runs"
                  value={cwd}
                  onChange={(e) => setCwd(e.currentTarget.value)}
                />
                <NumberInput label="Timeout (s)" min={1} value={timeout} onChange={setTimeoutSec} />
              </SimpleGrid>
              <Group>
                <Switch
                  label="On all clients at once (concurrent)"
                  checked={concurrent}
                  onChange={(e) => setConcurrent(e.currentTarget.checked)}
                />
                <Checkbox
                  label="Stop at the first failure (sequential only)"
                  checked={abortOnError}
                  disabled={concurrent}
                  onChange={(e) => setAbortOnError(e.currentTarget.checked)}
                />
              </Group>
              <StagedFields value={staged} set={(next) => setStaged((s) => ({ ...s, ...next }))} />
            </Stack>
          </Card>
          <Card withBorder padding="lg">
            <Title order={2} size="h4" mb="sm">
              Where
            </Title>
            <TargetFields targets={targets} set={(next) => setTargets((t) => ({ ...t, ...next }))} />
          </Card>
          {start.error && <ErrorAlert error={start.error} title="The run did not start" />}
          <Group>
            <Button type="submit" loading={start.isPending} disabled={!mayStart}>
              Start the run
            </Button>
          </Group>
        </Stack>
      </form>
    </Stack>
  );
}
