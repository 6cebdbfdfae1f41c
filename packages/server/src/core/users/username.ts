import { AppError, ERROR_CODES, normalizeName } from '@svc/protocol';

const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

/**
 * The key two user names are compared by: names with the same key look alike and cannot both exist.
 *
 * Invisible characters (zero-width spaces and joiners, variation selectors) are dropped, then NFKC folds
 * compatibility forms (fullwidth `ａｄｍｉｎ`, ligatures `ﬁ`, roman numerals `Ⅸ`, superscripts) into their
 * plain letters, then case is folded by upper-casing and lower-casing: unlike a lower-case alone this makes `ß`
 * and `ss`, final and medial sigma, and dotless `ı` and `i` equal too (JavaScript's case mappings do not depend
 * on the locale). A last NFKC puts the result of the case mapping back in normal form.
 * Look-alikes across scripts (Latin `a` and Cyrillic `а`) are not folded.
 */
export function lookAlikeKey(name: string): string {
  return name.replace(DEFAULT_IGNORABLE, '').normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC');
}

/** The one of `existing` that `name` equals (preferred) or looks like, if any. */
export function findLookAlike(existing: readonly string[], name: string): string | undefined {
  if (existing.includes(name)) return name;
  const key = lookAlikeKey(name);
  return existing.find((other) => lookAlikeKey(other) === key);
}

/** The 409 for a new user whose name is taken, exactly or by a look-alike (`existing`). */
export function userExistsError(name: string, existing: string): AppError {
  if (existing === name) {
    return new AppError('conflict', ERROR_CODES.userExists, `User '${name}' already exists`);
  }
  return new AppError(
    'conflict',
    ERROR_CODES.userExists,
    `User '${name}' is too similar to the existing user '${existing}'`,
    'names that differ only in letter case, width or another compatibility form are refused; choose another name',
  );
}

/**
 * The forms of a name a lookup tries: as given, then its NFC form. Names are stored in NFC from now on, but a
 * name written into a user file or table by hand in another form must still be found.
 */
export function lookupForms(name: string): string[] {
  const nfc = normalizeName(name);
  return nfc === name ? [name] : [name, nfc];
}
