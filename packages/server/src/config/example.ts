import { z } from 'zod';
import { svcdConfigSchema } from './schema.js';

const HEADER = [
  '# svcd example configuration (TOML)',
  '#',
  '# Every key is listed, commented out, with its default value; uncomment a line to change it.',
  '# Keys marked "not set by default" show an example value instead of a default.',
  '# Durations take a whole number of seconds or a string such as "500ms", "30s", "10m", "2h", "1d" or "1h30m".',
  '# Start the server with: svcd -c /path/to/svcd.conf',
];

/** Renders a value as TOML (strings, numbers, booleans and lists of them are all the schema uses). */
function toToml(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(toToml).join(', ')}]`;
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

function renderKey(key: string, field: z.ZodType): string[] {
  const doc = field.description;
  if (!doc) throw new Error(`config key ${key} has no .describe() doc line`);
  const lines = [`## ${doc}`];
  if (field instanceof z.ZodDefault || field instanceof z.ZodPrefault) {
    lines.push(`#${key} = ${toToml(field.def.defaultValue)}`);
  } else {
    const example = field.meta()?.example;
    if (example === undefined) throw new Error(`optional config key ${key} needs .meta({ example })`);
    lines.push(`#${key} = ${toToml(example)}  # not set by default`);
  }
  return lines;
}

/** The example config: every section and key of svcdConfigSchema, commented out with its default and doc line. */
export function renderExampleConfig(): string {
  const blocks = [HEADER.join('\n')];
  for (const [name, wrapped] of Object.entries(svcdConfigSchema.shape)) {
    const section = wrapped.unwrap();
    const keys = Object.entries(section.shape as Record<string, z.ZodType>).map(([key, field]) =>
      renderKey(key, field).join('\n'),
    );
    blocks.push([`# ${section.description ?? ''}`, `[${name}]`, '', keys.join('\n\n')].join('\n'));
  }
  return blocks.join('\n\n') + '\n';
}
