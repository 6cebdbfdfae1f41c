const MAX_KEY = 256;
const MAX_VALUE = 1024;

/** Parses one `key:value` label, split at the first colon; the key must not be empty, the value may be. */
export function parseLabel(text: string): [key: string, value: string] {
  const colon = text.indexOf(':');
  if (colon < 0) throw new Error(`label ${JSON.stringify(text)} must be key:value (no colon found)`);
  const key = text.slice(0, colon).trim();
  const value = text.slice(colon + 1).trim();
  if (key === '') throw new Error(`label ${JSON.stringify(text)} must be key:value; the key is empty`);
  if (key.length > MAX_KEY) throw new Error(`label key must be at most ${MAX_KEY} characters`);
  if (value.length > MAX_VALUE) throw new Error(`label value must be at most ${MAX_VALUE} characters`);
  return [key, value];
}

export function parseLabels(entries: readonly string[]): Record<string, string> {
  return Object.fromEntries(entries.map(parseLabel));
}
