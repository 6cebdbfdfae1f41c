/**
 * Sets one string key in one table of a TOML document and keeps every other line as it is, comments included.
 * Handles the plain layout svcd writes and people usually keep (`[section]` headers, `key = "value"` lines); the
 * caller must parse the result to confirm it holds the new value, and refuse when it does not.
 */
export function setTomlString(text: string, section: string, key: string, value: string): string {
  const lines = text.split(/(?<=\n)/);
  const header = /^\s*\[\s*([A-Za-z0-9_-]+)\s*\]\s*(?:#.*)?$/;
  const anyHeader = /^\s*\[/;
  const assignment = new RegExp(`^(\\s*${key}\\s*=\\s*)("(?:[^"\\\\\\n]|\\\\.)*"|'[^'\\n]*')(.*)$`);
  const rendered = JSON.stringify(value); // a JSON string is a valid TOML basic string
  let current: string | undefined;
  let headerIndex = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const body = line.replace(/\r?\n$/, '');
    if (anyHeader.test(body)) {
      current = header.exec(body)?.[1];
      if (current === section) headerIndex = i;
      continue;
    }
    if (current !== section) continue;
    const match = assignment.exec(body);
    if (match) {
      lines[i] = `${match[1] ?? ''}${rendered}${match[3] ?? ''}${line.slice(body.length)}`;
      return lines.join('');
    }
  }
  if (headerIndex >= 0) {
    lines.splice(headerIndex + 1, 0, `${key} = ${rendered}\n`);
    return lines.join('');
  }
  const separator = text === '' || text.endsWith('\n') ? '' : '\n';
  return `${text}${separator}\n[${section}]\n${key} = ${rendered}\n`;
}
