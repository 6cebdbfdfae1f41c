import { AppError, ERROR_CODES } from '@svc/protocol';

/** With codes delivered for login, every user needs a two_fa_send_to the delivery can use (spec 5.3.3). */
export interface SendToRule {
  problem(value: string): string | undefined;
}

/** A 400 for a two_fa_send_to the configured delivery cannot use; `required` on create. */
export function checkSendTo(
  rule: SendToRule | undefined,
  value: string | undefined,
  required: boolean,
): string | undefined {
  if (!rule || (value === undefined && !required)) return value;
  const problem = rule.problem(value ?? '');
  if (problem === undefined) return value;
  throw new AppError(
    'invalid',
    ERROR_CODES.twoFaSendToInvalid,
    `two_fa_send_to ${problem}`,
    'two-factor login is on: every user needs a two_fa_send_to the configured delivery can send the code to',
  );
}
