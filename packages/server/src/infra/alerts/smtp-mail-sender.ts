import { createTransport } from 'nodemailer';
import type { MailSender } from '../../core/alerts/ports.js';

export interface AlertSmtpSettings {
  host: string;
  port: number;
  senderEmail: string;
  username?: string;
  password?: string;
  secure: boolean;
  timeoutMs: number;
}

/** Alert e-mail through the [smtp] server the two-factor codes use. */
export function smtpMailSender(settings: AlertSmtpSettings): MailSender {
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
    async send(to, subject, text) {
      try {
        await transport.sendMail({ from: settings.senderEmail, to: [...to], subject, text });
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new Error(`the SMTP server ${server} did not take the message: ${reason}`, { cause: err });
      }
    },
  };
}
