import { Image, Stack, Text } from '@mantine/core';

/** An authenticator-app secret to set up: its QR code (a PNG from svcd) and the secret to type instead. */
export function TotpEnrolment({ secret, qr }: { secret: string; qr: string }) {
  return (
    <Stack align="center" gap="xs">
      <Image
        src={`data:image/png;base64,${qr}`}
        alt="QR code of the authenticator-app secret"
        w={180}
        h={180}
      />
      <Text size="xs" ff="monospace" data-testid="totp-secret">
        {secret}
      </Text>
    </Stack>
  );
}
