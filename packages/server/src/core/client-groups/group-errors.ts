import { AppError, ERROR_CODES } from '@svc/protocol';

export const groupErrors = {
  notFound: (id: string) =>
    new AppError('not_found', ERROR_CODES.clientGroupNotFound, `Client group '${id}' not found`),
  exists: (id: string) =>
    new AppError(
      'conflict',
      ERROR_CODES.clientGroupExists,
      `Client group '${id}' already exists`,
      'choose another id, or change the group with PUT /client-groups/{id}',
    ),
  idMismatch: (pathId: string, bodyId: string) =>
    new AppError(
      'invalid',
      ERROR_CODES.invalidRequest,
      `id: '${bodyId}' differs from the group id '${pathId}' in the path`,
      'a group cannot be renamed; leave id out or repeat the id of the path',
    ),
};
