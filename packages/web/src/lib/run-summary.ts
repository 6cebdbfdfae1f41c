/** How a run's targeting reads in a list: "clients web-1, web-2", "tags web AND db", "groups g1". */
export function describeTargets(run: {
  client_ids?: string[] | null;
  group_ids?: string[] | null;
  tags?: { operator: string; tags: string[] } | null;
  labels?: { operator: string; labels: string[] } | null;
}): string {
  const few = (list: string[]) =>
    list.length > 3 ? `${list.slice(0, 3).join(', ')} +${list.length - 3}` : list.join(', ');
  if (run.tags?.tags.length) return `tags ${run.tags.tags.join(` ${run.tags.operator} `)}`;
  if (run.labels?.labels.length) return `labels ${run.labels.labels.join(` ${run.labels.operator} `)}`;
  const parts = [];
  if (run.client_ids?.length)
    parts.push(`${run.client_ids.length === 1 ? 'client' : 'clients'} ${few(run.client_ids)}`);
  if (run.group_ids?.length)
    parts.push(`${run.group_ids.length === 1 ? 'group' : 'groups'} ${few(run.group_ids)}`);
  return parts.join(' + ') || '—';
}

/** A command, or a script's first line, for a list. */
export function describeWork(run: { command: string; is_script: boolean }, max = 80): string {
  const line = run.is_script
    ? (run.command.split('\n').find((l) => l.trim() && !l.startsWith('#!')) ?? '')
    : run.command;
  const textValue = line.trim();
  return (
    (run.is_script ? 'script: ' : '') +
    (textValue.length > max ? `${textValue.slice(0, max - 1)}…` : textValue)
  );
}
