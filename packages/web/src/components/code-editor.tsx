import { Textarea } from '@mantine/core';

export interface CodeEditorProps {
  label: string;
  value: string;
  onChange(value: string): void;
  language?: 'shell' | 'powershell' | 'python' | 'plain';
  minRows?: number;
}

/**
 * A script editor. This one is a plain monospace text area; the highlighted editor replaces it with the same
 * props (keep this interface).
 */
export function CodeEditor({ label, value, onChange, language = 'plain', minRows = 8 }: CodeEditorProps) {
  return (
    <Textarea
      label={label}
      value={value}
      onChange={(event) => onChange(event.currentTarget.value)}
      autosize
      minRows={minRows}
      ff="monospace"
      spellCheck={false}
      data-language={language}
    />
  );
}
