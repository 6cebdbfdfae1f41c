import { createTransport } from 'nodemailer';

/** The `[smtp]` settings: the server two-factor codes and alert e-mails go through. */
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

export interface SmtpMail {
  to: string | readonly string[];
  subject: string;
  text: string;
}

/**
 * Sends mail from `senderEmail` with nodemailer, one connection per message (codes and alerts are rare). A
 * failure rejects with an Error whose message names the server and its reason.
 */
export function smtpTransport(settings: SmtpSettings): (mail: SmtpMail) => Promise<void> {
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
  return async (mail) => {
    try {
      const to = typeof mail.to === 'string' ? mail.to : [...mail.to];
      await transport.sendMail({ from: settings.senderEmail, to, subject: mail.subject, text: mail.text });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(`the SMTP server ${server} did not take the message: ${reason}`, { cause: err });
    }
  };
}
