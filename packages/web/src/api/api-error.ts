/** An API error as svcd answers it (`{"errors":[{code,title,detail}]}`), or a network failure. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail: string,
  ) {
    super(detail ? `${title}: ${detail}` : title);
    this.name = 'ApiError';
  }
}

interface ErrorItem {
  code?: unknown;
  title?: unknown;
  detail?: unknown;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** The first error of an error body; a body of another shape still gives the status in words. */
export function apiErrorOf(status: number, body: unknown): ApiError {
  const first = (body as { errors?: ErrorItem[] } | null)?.errors?.[0];
  if (first) return new ApiError(status, text(first.code), text(first.title), text(first.detail));
  return new ApiError(status, '', `The server answered ${status}`, '');
}

/** Seconds in a ban or throttle's detail ("try again in 42 s"), for a countdown. */
export function secondsLeft(error: ApiError): number | undefined {
  const match = /try again in (\d+) s/.exec(error.detail);
  return match ? Number(match[1]) : undefined;
}
