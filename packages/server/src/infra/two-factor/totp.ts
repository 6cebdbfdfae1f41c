import { Secret, TOTP } from 'otpauth';
import { toDataURL } from 'qrcode';
import type { QrEncoder, TotpAlgorithm } from '../../core/two-factor/ports.js';

const PERIOD_S = 30;
const DIGITS = 6;
/** One step either side of now, for clocks a little apart (spec: ±1 step). */
const WINDOW = 1;
/** 160 bits, the size RFC 4226 recommends for SHA-1. */
const SECRET_BYTES = 20;

const totpFor = (secret: string, issuer = '', label = 'svc') =>
  new TOTP({
    issuer,
    label,
    algorithm: 'SHA1',
    digits: DIGITS,
    period: PERIOD_S,
    secret: Secret.fromBase32(secret),
  });

/** RFC 6238 with otpauth: 30 s period, 6 digits, SHA-1, the values every authenticator app expects. */
export const otpauthTotp: TotpAlgorithm = {
  newSecret: () => new Secret({ size: SECRET_BYTES }).base32,
  uri: (secret, issuer, account) => totpFor(secret, issuer, account).toString(),
  matchStep(secret, code, at) {
    if (!/^\d{6}$/.test(code)) return undefined;
    const timestamp = at.getTime();
    const delta = totpFor(secret).validate({ token: code, timestamp, window: WINDOW });
    return delta === null ? undefined : Math.floor(timestamp / 1000 / PERIOD_S) + delta;
  },
};

/** QR codes as base64 PNG (without the data: prefix), 200 px like the reference system's. */
export const pngQrEncoder: QrEncoder = {
  async png(text) {
    const url = await toDataURL(text, { type: 'image/png', width: 200, errorCorrectionLevel: 'M' });
    return url.slice(url.indexOf(',') + 1);
  },
};
