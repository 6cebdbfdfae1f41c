/** What a user's `two_fa_send_to` must look like for the configured delivery (spec 5.3.2–3). */
export interface SendToPolicy {
  /** Why `value` cannot receive codes (completing "two_fa_send_to …"), or undefined when it can. */
  problem(value: string): string | undefined;
}

export type DeliveryKind = 'smtp' | 'pushover' | 'executable';
export type SendToType = 'none' | 'email' | 'regex';

/** local@domain.tld, without blanks; the mail server has the last word. */
const EMAIL =
  /^[^\s@"<>,;]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;
/** Pushover user and group keys are 30 letters and digits. */
const PUSHOVER_KEY = /^[A-Za-z0-9]{30}$/;

const pattern =
  (regex: RegExp, expected: string): SendToPolicy['problem'] =>
  (value) =>
    regex.test(value) ? undefined : `must be ${expected}, got ${JSON.stringify(value.slice(0, 150))}`;

/**
 * SMTP needs an e-mail address and Pushover a user key, whatever two_fa_send_to_type says; for an executable
 * two_fa_send_to_type decides: `email`, `regex` (two_fa_send_to_regex) or `none` (any non-blank value).
 */
export function sendToPolicy(delivery: DeliveryKind, type: SendToType, regex?: string): SendToPolicy {
  let check: SendToPolicy['problem'];
  if (delivery === 'smtp' || (delivery === 'executable' && type === 'email')) {
    check = pattern(EMAIL, 'an e-mail address');
  } else if (delivery === 'pushover') {
    check = pattern(PUSHOVER_KEY, 'a Pushover user key (30 letters and digits)');
  } else if (type === 'regex' && regex !== undefined) {
    check = pattern(new RegExp(regex), `a match of [api] two_fa_send_to_regex ${regex}`);
  } else {
    check = (value) => (value.trim() === '' ? 'must not be blank' : undefined);
  }
  return { problem: (value) => (value === '' ? 'must not be empty' : check(value)) };
}
