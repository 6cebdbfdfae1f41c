import { AppError, ERROR_CODES } from '@svc/protocol';

/** The errors of the script library, each with its kind (→ status) and stable code. */
export const libraryErrors = {
  scriptNotFound: (id: string) =>
    new AppError(
      'not_found',
      ERROR_CODES.libraryScriptNotFound,
      `Library script '${id}' not found`,
      'GET /library/scripts lists the scripts with their ids',
    ),
  /** A run by script_id that names no library script. */
  unknownScriptId: (id: string) =>
    new AppError(
      'not_found',
      ERROR_CODES.libraryScriptNotFound,
      `script_id: no library script has the id '${id}'`,
      'GET /library/scripts lists the scripts with their ids',
    ),
  nameTaken: (name: string) =>
    new AppError(
      'conflict',
      ERROR_CODES.libraryScriptExists,
      `Another library script is named '${name}'`,
      'script names are unique: choose another name, or change that script with PUT',
    ),
};
