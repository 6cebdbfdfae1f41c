/**
 * A user's second factor as the users page shows it, from GET /users' `two_fa` ({ enabled, method }): which
 * factor svcd asks for and whether this user's logins use it.
 */
export interface TwoFaState {
  enabled: boolean;
  method: string | null;
}

const METHODS: Record<string, string> = {
  totp_authenticator_app: 'authenticator app',
  smtp: 'code by e-mail',
  pushover: 'code by Pushover',
  executable: 'code by script',
};

/** The method's name in words (an unknown one as svcd names it). */
export const twoFaMethodName = (method: string): string => METHODS[method] ?? method;

/**
 * `on`: the user's logins ask for the second factor; `off`: svcd has it but this user is not set up (no app
 * enrolled, no two_fa_send_to); `none`: svcd has no second factor. `text` is the cell's words.
 */
export function describeTwoFa(state: TwoFaState | undefined): { level: 'on' | 'off' | 'none'; text: string } {
  if (!state?.method) return { level: 'none', text: 'off on this server' };
  const name = twoFaMethodName(state.method);
  if (state.enabled) return { level: 'on', text: name };
  return {
    level: 'off',
    text: state.method === 'totp_authenticator_app' ? `${name} not set up` : `${name}: no address`,
  };
}
