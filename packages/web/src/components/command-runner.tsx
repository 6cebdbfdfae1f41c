import { Badge, Button, Card, Code, Group, NumberInput, Stack, Text, Textarea, Title } from '@mantine/core';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { commandSocketUrl, runCommand, type CommandFinal } from '../lib/command-socket.js';
import { session } from '../session/session.js';

interface RunState {
  running: boolean;
  output: string;
  final?: CommandFinal;
  error?: { title: string; detail: string };
}

/** Runs a command on one client and shows its output as it arrives. */
export function CommandRunner({ clientId, connected }: { clientId: string; connected: boolean }) {
  const [command, setCommand] = useState('');
  const [timeout, setTimeoutSec] = useState<number | string>(60);
  const [run, setRun] = useState<RunState>();
  const stop = useRef<() => void>(undefined);
  useEffect(() => () => stop.current?.(), []);

  const start = (event: FormEvent) => {
    event.preventDefault();
    const token = session.get()?.token;
    if (!token) return;
    stop.current?.();
    setRun({ running: true, output: '' });
    stop.current = runCommand(
      commandSocketUrl(window.location, token),
      { command, client_ids: [clientId], timeout_sec: Number(timeout) || 60 },
      {
        onChunk: (chunk) =>
          setRun((r) => r && { ...r, output: r.output + chunk.result.stdout + chunk.result.stderr }),
        onFinal: (job) =>
          setRun(
            (r) =>
              r && {
                ...r,
                final: job,
                // The final record carries the whole output; chunks may have been cut by a slow reader.
                output: job.result.stdout + job.result.stderr || r.output,
              },
          ),
        onError: (title, detail) => setRun((r) => r && { ...r, error: { title, detail } }),
        onClose: () => setRun((r) => r && { ...r, running: false }),
      },
    );
  };

  const final = run?.final;
  return (
    <Card withBorder padding="lg">
      <Title order={2} size="h4" mb="sm">
        Run a command
      </Title>
      <form onSubmit={start}>
        <Stack gap="sm">
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
          <Group align="end">
            <NumberInput
              label="Timeout (s)"
              min={1}
              max={86400}
              w={130}
              value={timeout}
              onChange={setTimeoutSec}
            />
            <Button type="submit" loading={run?.running} disabled={!connected}>
              Run
            </Button>
            {!connected && (
              <Text size="sm" c="dimmed">
                The client is disconnected; it runs commands once it is back.
              </Text>
            )}
          </Group>
        </Stack>
      </form>
      {run && (
        <Stack gap="xs" mt="md" aria-live="polite">
          <Group gap="xs">
            {run.running && !final && <Badge color="blue.8">running</Badge>}
            {final && (
              <Badge color={final.status === 'successful' ? 'teal.9' : 'red.9'} data-testid="command-status">
                {final.status}
              </Badge>
            )}
            {final && final.exit_code !== null && (
              <Text size="sm" data-testid="command-exit-code">
                exit code {final.exit_code}
              </Text>
            )}
          </Group>
          {run.error && (
            <Text c="red" size="sm" role="alert">
              {run.error.title}
              {run.error.detail ? `: ${run.error.detail}` : ''}
            </Text>
          )}
          {final?.error && (
            <Text c="red" size="sm">
              {final.error}
            </Text>
          )}
          <Code block className="console-output" data-testid="command-output">
            {run.output || (run.running ? 'waiting for output…' : '(no output)')}
          </Code>
        </Stack>
      )}
    </Card>
  );
}
