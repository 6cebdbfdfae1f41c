import { Badge, Text } from '@mantine/core';
import { describeTwoFa, type TwoFaState } from '../lib/two-fa.js';

/** A user's second-factor state (GET /users' two_fa): a badge when their logins use it, words otherwise. */
export function TwoFaStateText({ state }: { state: TwoFaState | undefined }) {
  const { level, text } = describeTwoFa(state);
  if (level === 'on')
    return (
      <Badge color="teal.9" variant="filled" tt="none" size="sm" miw="max-content" data-testid="user-2fa">
        {text}
      </Badge>
    );
  return (
    <Text span size="sm" c={level === 'off' ? undefined : 'dimmed'} data-testid="user-2fa">
      {text}
    </Text>
  );
}
