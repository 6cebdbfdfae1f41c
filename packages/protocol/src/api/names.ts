import { z } from 'zod';

/**
 * Rules for the names people read and type: user names and group names.
 *
 * A name is taken in Unicode NFC, so the same text typed on different systems is one name. Refused, because they
 * make two names look the same or make one look like something else: control characters (C0, DEL, C1), the
 * bidirectional controls (LRM/RLM/ALM, embeddings, overrides and isolates: U+061C, U+200E–U+200F,
 * U+202A–U+202E, U+2066–U+2069) and lone surrogates (text that is not valid UTF-16 and cannot be stored as UTF-8).
 * Look-alikes of an existing name (case, width, ligatures) are refused by the user service, which knows the others.
 */

export const NAME_MAX_CHARACTERS = 150;

const CONTROL = /\p{Cc}/u;
const BIDI_CONTROL = /\p{Bidi_Control}/u;
const LONE_SURROGATE = /\p{Cs}/u;

/** The one form a name is compared and kept in. */
export const normalizeName = (name: string): string => name.normalize('NFC');

/** The first rule a name breaks, as a message completing "the name …", or undefined when it is fine. */
export function nameProblem(name: string): string | undefined {
  // normalize() leaves lone surrogates alone, so this check also holds for the NFC form.
  if (LONE_SURROGATE.test(name)) return 'must be valid Unicode text (it contains a lone surrogate)';
  if (name.length === 0) return 'must not be empty';
  // Code points, as the varchar(150) columns of PostgreSQL and MySQL count them.
  if ([...name].length > NAME_MAX_CHARACTERS) return `must be at most ${NAME_MAX_CHARACTERS} characters`;
  if (name.trim() !== name) return 'must not start or end with blanks';
  if (CONTROL.test(name)) return 'must not contain control characters';
  if (BIDI_CONTROL.test(name)) {
    return 'must not contain bidirectional control characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069)';
  }
  return undefined;
}

/** The first rule a user name breaks (the name rules plus: no colon), or undefined. */
export function usernameProblem(name: string): string | undefined {
  if (name.includes(':')) return 'must not contain a colon (HTTP Basic auth splits on it)';
  return nameProblem(name);
}

const nameSchema = (problem: (name: string) => string | undefined) =>
  z
    .string()
    .transform(normalizeName)
    .superRefine((name, ctx) => {
      const message = problem(name);
      if (message !== undefined) ctx.addIssue({ code: 'custom', message, input: name });
    });

/** A user name: validated, and NFC-normalised on output. */
export const usernameSchema = nameSchema(usernameProblem);

/** A group name: validated, and NFC-normalised on output. */
export const groupNameSchema = nameSchema(nameProblem);
