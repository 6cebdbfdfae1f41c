import type { MailSender } from '../../core/alerts/ports.js';
import { smtpTransport, type SmtpSettings } from '../smtp-transport.js';

/** Alert e-mail through the [smtp] server the two-factor codes use. */
export function smtpMailSender(settings: SmtpSettings): MailSender {
  const send = smtpTransport(settings);
  return { send: (to, subject, text) => send({ to, subject, text }) };
}
