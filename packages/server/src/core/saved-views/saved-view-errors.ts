import { AppError, ERROR_CODES, SAVED_VIEWS_PER_USER } from '@svc/protocol';

/** The errors of saved views, each with its kind (→ status) and stable code. */
export const savedViewErrors = {
  notFound: (id: string) =>
    new AppError('not_found', ERROR_CODES.savedViewNotFound, `You have no saved view with id '${id}'`),
  nameTaken: (name: string) =>
    new AppError(
      'conflict',
      ERROR_CODES.savedViewExists,
      `You already have a saved view named '${name}'`,
      'choose another name, or change that view with PUT /api/v1/me/views/{id}',
    ),
  idTaken: () =>
    new AppError('conflict', ERROR_CODES.savedViewExists, 'Could not draw an unused view id', 'try again'),
  tooMany: () =>
    new AppError(
      'conflict',
      ERROR_CODES.savedViewLimit,
      `You have ${SAVED_VIEWS_PER_USER} saved views, the most one user may keep`,
      'delete one you no longer use',
    ),
  nothingToChange: () =>
    new AppError(
      'invalid',
      ERROR_CODES.nothingToChange,
      'Nothing to change',
      'send name, search, columns and/or sort',
    ),
};
