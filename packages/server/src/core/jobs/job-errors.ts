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
  emptyScript: () =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      'script: the decoded script is empty or blank',
      'send the script text as base64',
    ),
};
