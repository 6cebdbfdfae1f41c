import { ConfigError } from '@svc/platform';
import { parseSvcdConfig } from '../../src/config/schema.js';

/** The problems svcd reports for this TOML, or [] when it loads. */
export function problemsOf(toml: string): string[] {
  try {
    parseSvcdConfig(toml);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}
