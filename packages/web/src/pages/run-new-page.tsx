import { Button, Card, Group, Stack, Title } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { getRouteApi, useNavigate } from '@tanstack/react-router';
import { useEffect, useState, type FormEvent } from 'react';
import { libraryScriptsQuery, startRun } from '../api/runs.js';
import { ErrorAlert } from '../components/error-alert.js';
import { RUN_SOURCES, RunOptionsFields } from '../components/run-options-fields.js';
import { TargetFields } from '../components/target-fields.js';
import { initialTargets, runRequest, targetingBody, type RunWhat } from '../lib/run-compose.js';
import { noStaging, stagedBody } from '../lib/staged-run.js';
import { useAllows } from '../session/use-rights.js';

const route = getRouteApi('/console/runs/new');

export function RunNewPage() {
  const search = route.useSearch();
  const navigate = useNavigate();
  const [what, setWhat] = useState<RunWhat>(() => ({
    source: search.script_id ? 'library' : 'command',
    command: search.command ?? '',
    script: '#!/bin/sh\n',
    scriptId: search.script_id ?? '',
    interpreter: '',
    cwd: '',
    timeoutSec: 60,
    concurrent: true,
    abortOnError: false,
    staged: noStaging(),
  }));
  const set = (next: Partial<RunWhat>) => setWhat((w) => ({ ...w, ...next }));
  // Commands need the `commands` permission, scripts (typed or from the library) `scripts`.
  const mayCommand = useAllows('commands');
  const mayScript = useAllows('scripts');
  const sources = RUN_SOURCES.filter((s) => (s.value === 'command' ? mayCommand : mayScript));
  const mayStart = sources.some((s) => s.value === what.source);
  const firstSource = sources[0]?.value;
  useEffect(() => {
    // /me answers after the first render: fall back to what the caller may start.
    if (!mayStart && firstSource) setWhat((w) => ({ ...w, source: firstSource }));
  }, [mayStart, firstSource]);
  const [targets, setTargets] = useState(() => initialTargets(search));
  const library = useQuery({ ...libraryScriptsQuery, enabled: what.source === 'library' });
  const chosen = library.data?.find((s) => s.id === what.scriptId);

  // A library script brings its own options; the form shows them and sends only what the operator changes.
  useEffect(() => {
    if (!chosen) return;
    setWhat((w) => ({
      ...w,
      interpreter: chosen.interpreter,
      cwd: chosen.cwd,
      timeoutSec: chosen.timeout_sec,
    }));
  }, [chosen]);

  const start = useMutation({
    mutationFn: () => {
      const targeting = targetingBody(targets);
      if (!targeting) throw new Error('Choose the clients to run on.');
      const request = runRequest(
        what.source,
        { command: what.command, script: what.script, scriptId: what.scriptId },
        {
          interpreter: what.interpreter,
          cwd: what.cwd,
          timeoutSec: Number(what.timeoutSec) || 60,
          concurrent: what.concurrent,
          abortOnError: what.abortOnError,
        },
        targeting,
      );
      return startRun(request.path, { ...request.body, ...stagedBody(what.staged) });
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
            <RunOptionsFields
              value={what}
              set={set}
              commandPlaceholder="uname -a"
              showLibraryText
              sources={sources}
            />
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
