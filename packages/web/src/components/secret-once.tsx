import { Alert, Button, Code, CopyButton, Group, Stack } from '@mantine/core';

/**
 * A secret svcd shows only once (a new API token, a generated password): the value, a copy button and the
 * warning. The parent drops the value when its dialog closes, so it is never kept in the page.
 */
export function SecretOnce({ value, label, warning }: { value: string; label: string; warning: string }) {
  return (
    <Stack gap="xs">
      <Alert color="yellow" title={`Copy the ${label} now`}>
        {warning}
      </Alert>
      <Code
        block
        data-testid="secret-once"
        aria-label={label}
        style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }}
      >
        {value}
      </Code>
      <Group>
        <CopyButton value={value}>
          {({ copied, copy }) => (
            <Button
              size="xs"
              variant={copied ? 'filled' : 'default'}
              color={copied ? 'teal' : undefined}
              onClick={copy}
            >
              {copied ? 'Copied' : `Copy the ${label}`}
            </Button>
          )}
        </CopyButton>
      </Group>
    </Stack>
  );
}
