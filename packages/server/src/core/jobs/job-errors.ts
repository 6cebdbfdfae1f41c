import { AppError, ERROR_CODES } from '@svc/protocol';

/** The errors of the command and script API, each with its kind (→ status) and stable code. */
export const jobErrors = {
  clientNotFound: (clientId: string) =>
    new AppError('not_found', ERROR_CODES.clientNotFound, `Client '${clientId}' not found`),
  clientNotConnected: (clientId: string) =>
    new AppError(
      'conflict',
      ERROR_CODES.clientNotConnected,
      `Client '${clientId}' is not connected`,
      'commands and scripts run only on connected clients; no job was created',
    ),
  jobNotFound: (clientId: string, jid: string) =>
    new AppError('not_found', ERROR_CODES.jobNotFound, `Job '${jid}' of client '${clientId}' not found`),
  jobEnded: (jid: string, status: string) =>
    new AppError(
      'conflict',
      ERROR_CODES.jobEnded,
      `Job '${jid}' cannot be cancelled: it has ${/^[a-z]+$/.test(status) ? `ended (${status})` : status}`,
      'only queued and running jobs can be cancelled',
    ),
  cannotCancel: (jid: string, why: string) =>
    new AppError(
      'conflict',
      ERROR_CODES.jobNotCancellable,
      `Job '${jid}' could not be cancelled: ${why}`,
      'a running job is cancelled by its agent, which must be connected and support job.cancel',
    ),
  emptyScript: () =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      'script: the decoded script is empty or blank',
      'send the script text as base64',
    ),
};
