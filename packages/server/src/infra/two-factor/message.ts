import type { CodeMessage } from '../../core/two-factor/ports.js';

export const MESSAGE_TITLE = 'svc login code';

const validity = (seconds: number): string =>
  seconds % 60 === 0 ? `${seconds / 60} minute${seconds === 60 ? '' : 's'}` : `${seconds} seconds`;

/** The text every delivery sends: the code, how long it is valid, and who asked (spec 5.3.6). */
export function messageText(message: CodeMessage): string {
  return [
    `Your svc login code is ${message.code}`,
    `It is valid for ${validity(message.ttlSeconds)}.`,
    `Login of '${message.username}' requested from ${message.requester.ip} (${message.requester.userAgent || 'no user agent'}).`,
    'If this was not you, do not use the code and tell your administrator.',
  ].join('\n');
}
