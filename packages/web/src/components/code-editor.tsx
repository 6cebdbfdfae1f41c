import { Input, Loader } from '@mantine/core';
import { lazy, Suspense, useId } from 'react';

export type CodeLanguage = 'shell' | 'powershell' | 'python' | 'plain';

export interface CodeEditorProps {
  label: string;
  value: string;
  onChange(value: string): void;
  language?: CodeLanguage;
  minRows?: number;
}

// CodeMirror is loaded only when a page shows an editor, never with the login page.
const CodeMirrorEditor = lazy(() => import('./code-editor-view.js'));

/**
 * A code editor with syntax highlighting (CodeMirror 6, loaded on first use). Labelled for assistive technology;
 * Tab indents, Escape then Tab moves on to the next control.
 */
export function CodeEditor(props: CodeEditorProps) {
  const { label, value, language = 'plain', minRows = 8 } = props;
  const labelId = useId();
  return (
    <Input.Wrapper
      label={label}
      labelProps={{ id: labelId, component: 'div' }}
      description="Tab indents; press Escape, then Tab, to leave the editor."
    >
      <Suspense fallback={<Loader size="sm" role="status" aria-label={`Loading the editor for ${label}`} />}>
        <CodeMirrorEditor
          labelId={labelId}
          value={value}
          onChange={(next) => props.onChange(next)}
          language={language}
          minRows={minRows}
        />
      </Suspense>
    </Input.Wrapper>
  );
}
