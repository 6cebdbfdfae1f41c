import { CodeDeliveryError, type CodeDelivery } from '../../core/two-factor/ports.js';
import { smtpTransport, type SmtpSettings } from '../smtp-transport.js';
import { MESSAGE_TITLE, messageText } from './message.js';

/** Two-factor codes by e-mail through the [smtp] server. */
export function smtpDelivery(settings: SmtpSettings): CodeDelivery {
  const send = smtpTransport(settings);
  return {
    method: 'email',
    async send(message) {
      try {
        await send({ to: message.sendTo, subject: MESSAGE_TITLE, text: messageText(message) });
      } catch (err) {
        throw new CodeDeliveryError((err as Error).message, { cause: err });
      }
    },
  };
}
