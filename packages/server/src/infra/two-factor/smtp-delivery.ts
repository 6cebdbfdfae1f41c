import { createTransport } from 'nodemailer';
import { CodeDeliveryError, type CodeDelivery } from '../../core/two-factor/ports.js';
import { MESSAGE_TITLE, messageText } from './message.js';

export interface SmtpSettings {
  host: string;
  port: number;
  senderEmail: string;
  username?: string;
  password?: string;
  /** Implicit TLS from the first byte (port 465); otherwise plain, upgraded by STARTTLS when offered. */
  secure: boolean;
  timeoutMs: number;
}

/** E-mail with nodemailer; one connection per message (logins are rare). */
export function smtpDelivery(settings: SmtpSettings): CodeDelivery {
  const transport = createTransport({
    host: settings.host,
    port: settings.port,
    secure: settings.secure,
    ...(settings.username ? { auth: { user: settings.username, pass: settings.password ?? '' } } : {}),
    connectionTimeout: settings.timeoutMs,
    greetingTimeout: settings.timeoutMs,
    socketTimeout: settings.timeoutMs,
  });
  const server = `${settings.host}:${settings.port}`;
  return {
    method: 'email',
    async send(message) {
      try {
        await transport.sendMail({
          from: settings.senderEmail,
          to: message.sendTo,
          subject: MESSAGE_TITLE,
          text: messageText(message),
        });
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new CodeDeliveryError(`the SMTP server ${server} did not take the message: ${reason}`, {
          cause: err,
        });
      }
    },
  };
}
