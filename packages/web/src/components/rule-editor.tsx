import { ActionIcon, Button, Group, Select, Stack, Text, TextInput } from '@mantine/core';
import {
  MODE_LABELS,
  nextFreeKey,
  PARAM_KEYS,
  PARAM_LABELS,
  type RuleMode,
  type RuleRow,
} from '../lib/group-rules.js';

const KEY_OPTIONS = PARAM_KEYS.map((key) => ({ value: key, label: PARAM_LABELS[key] }));
const MODE_OPTIONS = (Object.keys(MODE_LABELS) as RuleMode[]).map((mode) => ({
  value: mode,
  label: MODE_LABELS[mode],
}));

/**
 * A client group's rule as rows: every row must match (AND between rows); within a row the patterns match as
 * the mode says. `*` is a wildcard, matching ignores case, labels are `key:value`.
 */
export function RuleEditor({ rows, onChange }: { rows: RuleRow[]; onChange: (rows: RuleRow[]) => void }) {
  const setRow = (index: number, next: Partial<RuleRow>) =>
    onChange(rows.map((row, i) => (i === index ? { ...row, ...next } : row)));
  return (
    <Stack gap="sm">
      <Text size="sm" c="dimmed">
        A client is a member when every row matches. Separate patterns with commas; <code>*</code> matches any
        text, case is ignored; labels are written <code>key:value</code>.
      </Text>
      {rows.map((row, index) => (
        <Group key={index} align="end" gap="xs" wrap="wrap" data-testid="rule-row">
          <Select
            label={`Rule ${index + 1}: field`}
            data={KEY_OPTIONS}
            allowDeselect={false}
            value={row.key}
            onChange={(key) => key && setRow(index, { key: key })}
            w={190}
          />
          <Select
            label={`Rule ${index + 1}: how`}
            data={MODE_OPTIONS}
            allowDeselect={false}
            value={row.mode}
            onChange={(mode) => mode && setRow(index, { mode: mode })}
            w={200}
          />
          <TextInput
            label={`Rule ${index + 1}: patterns`}
            placeholder={row.key === 'labels' ? 'city:Berlin, team:*' : 'web-*, db-1'}
            value={row.text}
            onChange={(e) => setRow(index, { text: e.currentTarget.value })}
            style={{ flex: '1 1 14rem' }}
          />
          <ActionIcon
            variant="subtle"
            color="red"
            size="lg"
            aria-label={`Remove rule ${index + 1}`}
            onClick={() => onChange(rows.filter((_, i) => i !== index))}
          >
            ×
          </ActionIcon>
        </Group>
      ))}
      <Group>
        <Button
          variant="light"
          size="xs"
          onClick={() => onChange([...rows, { key: nextFreeKey(rows), mode: 'any', text: '' }])}
        >
          Add a rule
        </Button>
      </Group>
    </Stack>
  );
}
