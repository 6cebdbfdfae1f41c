import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { StreamLanguage, syntaxHighlighting, type StreamParser } from '@codemirror/language';
import { powerShell } from '@codemirror/legacy-modes/mode/powershell';
import { python } from '@codemirror/legacy-modes/mode/python';
import { shell } from '@codemirror/legacy-modes/mode/shell';
import { EditorState, type Extension } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, keymap, lineNumbers } from '@codemirror/view';
import { classHighlighter } from '@lezer/highlight';
import { useEffect, useRef } from 'react';
import type { CodeLanguage } from './code-editor.js';
import './code-editor.css';

const PARSERS: Record<Exclude<CodeLanguage, 'plain'>, StreamParser<unknown>> = {
  shell: shell,
  powershell: powerShell,
  python: python,
};

function languageOf(language: CodeLanguage): Extension {
  return language === 'plain' ? [] : StreamLanguage.define(PARSERS[language]);
}

interface Props {
  labelId: string;
  value: string;
  onChange: (value: string) => void;
  language: CodeLanguage;
  minRows: number;
}

/**
 * The CodeMirror view behind CodeEditor. Colours come from classes (`tok-*`, `cm-*`) styled in code-editor.css
 * with the console's light and dark palettes; CodeMirror's own base rules go in one style element, which the
 * console's CSP allows for styles only (`style-src 'self' 'unsafe-inline'`, as Mantine needs; scripts stay
 * `'self'`). Were style-src ever strict, `EditorView.cspNonce` would carry svcd's nonce.
 */
export default function CodeEditorView({ labelId, value, onChange, language, minRows }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const changed = useRef(onChange);
  changed.current = onChange;

  useEffect(() => {
    if (!host.current) return;
    const editor = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          history(),
          drawSelection(),
          highlightActiveLine(),
          keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
          syntaxHighlighting(classHighlighter),
          languageOf(language),
          EditorView.lineWrapping,
          EditorView.theme({ '.cm-scroller': { minHeight: `${1.45 * minRows + 0.5}em` } }),
          EditorView.contentAttributes.of({ 'aria-labelledby': labelId, 'aria-multiline': 'true' }),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) changed.current(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = editor;
    return () => {
      editor.destroy();
      view.current = null;
    };
    // The editor is made once per language and size; value changes from outside are applied below.
  }, [language, labelId, minRows]);

  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value) {
      editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
    }
  }, [value]);

  return <div ref={host} className="code-editor" data-language={language} />;
}
