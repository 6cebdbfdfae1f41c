import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { renderExampleConfig } from '../../src/config/example.js';
import { parseSvcdConfig, svcdConfigSchema } from '../../src/config/schema.js';

const exampleFile = fileURLToPath(new URL('../../svcd.example.conf', import.meta.url));

// After changing the schema, write the file again with `npm run update:example-config`.

const rendered = renderExampleConfig();

test('svcd.example.conf is exactly what the schema generates', () => {
  expect(readFileSync(exampleFile, 'utf8')).toBe(rendered);
});

test('every section and key is present with a doc line', () => {
  for (const [section, schema] of Object.entries(svcdConfigSchema.shape)) {
    expect(rendered).toContain(`\n[${section}]\n`);
    for (const key of Object.keys(schema.unwrap().shape)) {
      expect(rendered).toMatch(new RegExp(`\\n## .+\\n#${key} = `));
    }
  }
});

test('the example loads as it is, and with every default uncommented, to the defaults', () => {
  const defaults = parseSvcdConfig('');
  expect(parseSvcdConfig(rendered)).toEqual(defaults);
  const uncommented = rendered
    .split('\n')
    .map((line) =>
      /^#[a-z_]+ = /.test(line) && !line.endsWith('# not set by default') ? line.slice(1) : line,
    )
    .join('\n');
  expect(uncommented).not.toBe(rendered);
  expect(parseSvcdConfig(uncommented)).toEqual(defaults);
});

test('each example value of an unset key is valid on its own', () => {
  const examples = rendered.split('\n').filter((line) => line.endsWith('# not set by default'));
  expect(examples.length).toBeGreaterThan(0);
  let section = '';
  for (const line of rendered.split('\n')) {
    if (line.startsWith('[')) section = line;
    if (!line.endsWith('# not set by default')) continue;
    const problems = (() => {
      try {
        parseSvcdConfig(`${section}\n${line.slice(1)}\n`);
        return [];
      } catch (error) {
        return (error as { problems: string[] }).problems;
      }
    })();
    // Only cross-field rules may complain (a lone user table needs its group table, and so on), never the value.
    for (const problem of problems) expect(problem).not.toMatch(/: (expected|must|invalid)/);
  }
});
