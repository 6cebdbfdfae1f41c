/** Parses /etc/os-release (`KEY=value`, values optionally quoted with shell escapes). */
export function parseOsRelease(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^\s*([A-Z0-9_]+)=(.*)$/.exec(line);
    if (!match) continue;
    const [, key = '', raw = ''] = match;
    let value = raw.trim();
    const quote = value[0];
    if ((quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2) {
      value = value.slice(1, -1);
      if (quote === '"') value = value.replace(/\\(["\\$`])/g, '$1');
    }
    out[key] = value;
  }
  return out;
}

export interface OsIdentity {
  os_family: string;
  os_full_name: string;
  os_version: string;
}

/** Family = the first ID_LIKE entry (e.g. `debian` for Ubuntu, `rhel` for Rocky), else ID. */
export function linuxIdentity(release: Record<string, string>): OsIdentity {
  const like = (release.ID_LIKE ?? '').split(/\s+/).find((id) => id !== '');
  const name = release.NAME ?? '';
  const version = release.VERSION_ID ?? '';
  return {
    os_family: like ?? release.ID ?? 'linux',
    os_full_name: release.PRETTY_NAME ?? (name && version ? `${name} ${version}` : name || 'Linux'),
    os_version: version || (release.BUILD_ID ?? ''),
  };
}

/** Reads ProductName and ProductVersion from macOS's SystemVersion.plist text. */
export function parseMacSystemVersion(plist: string): { name: string; version: string } {
  const value = (key: string) =>
    new RegExp(`<key>${key}</key>\\s*<string>([^<]*)</string>`).exec(plist)?.[1] ?? '';
  return { name: value('ProductName'), version: value('ProductVersion') };
}
