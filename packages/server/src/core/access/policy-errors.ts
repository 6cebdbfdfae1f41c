import { AppError, ERROR_CODES } from '@svc/protocol';

/** A group's stored restrictions cannot be read: requests they would govern are refused (500), never unchecked. */
export const storedPolicyInvalid = (group: string, detail: string): AppError =>
  new AppError(
    'internal',
    ERROR_CODES.storedGroupPolicyInvalid,
    `The stored restrictions of user group '${group}' are invalid`,
    `${detail}; correct them with PUT /user-groups/${group}`,
  );
