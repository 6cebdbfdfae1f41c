/**
 * "Did you mean" for unknown fields of a strict object: the known field a mistyped one most likely stands for
 * (another case, singular or plural, or at most two letters off).
 */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

export function closestKey(unknown: string, known: readonly string[]): string | undefined {
  const lower = unknown.toLowerCase();
  const singularOrPlural = (k: string) => lower === `${k}s` || `${lower}s` === k;
  const exact = known.find((k) => k.toLowerCase() === lower || singularOrPlural(k.toLowerCase()));
  if (exact !== undefined) return exact;
  if (lower.length < 4) return undefined;
  let best: { key: string; distance: number } | undefined;
  for (const key of known) {
    const distance = editDistance(lower, key.toLowerCase());
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { key, distance };
  }
  return best?.key;
}

/**
 * The `error` option of a strict object: for unknown fields with a likely intended one, the message
 * `did you mean "tag" for "tags"?` (the body parser shows it after the field); other issues keep their message.
 */
export const unknownKeyHints =
  (known: readonly string[]) =>
  (issue: { code?: string; keys?: readonly string[] }): string | undefined => {
    if (issue.code !== 'unrecognized_keys') return undefined;
    const hints = (issue.keys ?? []).flatMap((key) => {
      const meant = closestKey(key, known);
      return meant === undefined ? [] : [`"${meant}" for "${key}"`];
    });
    return hints.length === 0 ? undefined : `did you mean ${hints.join(', ')}?`;
  };
