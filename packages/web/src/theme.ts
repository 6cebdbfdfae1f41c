import { createTheme } from '@mantine/core';

/** System fonts only: the console makes no request to another origin and ships no font files. */
export const theme = createTheme({
  primaryColor: 'indigo',
  // White text on the filled buttons keeps a contrast of at least 4.5:1 (WCAG AA).
  primaryShade: { light: 8, dark: 8 },
  defaultRadius: 'md',
  fontFamily:
    'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "Noto Sans", "Liberation Sans", Arial, sans-serif',
  fontFamilyMonospace: 'ui-monospace, SFMono-Regular, "DejaVu Sans Mono", Menlo, Consolas, monospace',
  headings: { fontWeight: '650' },
});
