/** Saves text as a file through a temporary object URL (no inline script, so the strict CSP allows it). */
export function saveText(name: string, textValue: string, type: string): void {
  const url = URL.createObjectURL(new Blob([textValue], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
