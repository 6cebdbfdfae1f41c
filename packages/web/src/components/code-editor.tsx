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
export function CodeEditor(props: CodeEditorProps) {
  return (
    <Textarea
      label={props.label}
      value={props.value}
      onChange={(event) => props.onChange(event.currentTarget.value)}
      autosize
      minRows={props.minRows ?? 8}
      ff="monospace"
      spellCheck={false}
      data-language={props.language ?? 'plain'}
    />
  );
}
