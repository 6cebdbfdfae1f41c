import type { z } from 'zod';
import { AppError, ERROR_CODES } from '@svc/protocol';

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => `'${k}'`).join(', ');
    // A schema with unknownKeyHints names the field meant; otherwise the message is zod's own.
    const fix = issue.message.startsWith('did you mean') ? issue.message : 'remove it';
    return `unknown field ${keys}${path ? ` in ${path}` : ''}; ${fix}`;
  }
  return path ? `${path}: ${issue.message}` : issue.message;
}

/** Validates a request body strictly: a missing body, a wrong type or an unknown field is a 400 naming the field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === undefined || body === null) {
    throw new AppError(
      'invalid',
      ERROR_CODES.missingBody,
      'Missing body with JSON data',
      'send a JSON object',
    );
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const [first, ...rest] = result.error.issues.map((issue) => ({
    code: ERROR_CODES.invalidRequest,
    title: describeIssue(issue),
    detail: '',
  }));
  throw new AppError('invalid', ERROR_CODES.invalidRequest, first?.title ?? 'Invalid request body', '', rest);
}
