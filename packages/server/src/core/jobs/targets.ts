import { AppError, ERROR_CODES, isAppError, type MultiCommandBody } from '@svc/protocol';
import type { ClientGroups, TargetClient, TargetClients } from './multi-job-ports.js';

export type Targeting = Pick<MultiCommandBody, 'client_ids' | 'group_ids' | 'tags' | 'labels'>;

const clientNotFound = (id: string) =>
  new AppError(
    'not_found',
    ERROR_CODES.clientNotFound,
    `Client '${id}' not found`,
    'client_ids may name only known clients; nothing was run',
  );

const noTargets = (what: string) =>
  new AppError(
    'invalid',
    ERROR_CODES.noTargets,
    `No client matches the ${what}`,
    'nothing was run; check the targeting against GET /clients',
  );

/** `key:value` with blanks around the colon stripped, both halves lower-cased (spec 4.11 rule 5). */
function labelPair(entry: string): [string, string] {
  const colon = entry.indexOf(':');
  return [
    entry.slice(0, colon).trim().toLowerCase(),
    entry
      .slice(colon + 1)
      .trim()
      .toLowerCase(),
  ];
}

function hasLabel(client: TargetClient, [key, value]: [string, string]): boolean {
  for (const [k, v] of Object.entries(client.labels))
    if (k.trim().toLowerCase() === key && v.trim().toLowerCase() === value) return true;
  return false;
}

function matching<T>(wanted: T[], operator: 'AND' | 'OR', has: (entry: T) => boolean): boolean {
  return operator === 'AND' ? wanted.every(has) : wanted.some(has);
}

/**
 * The clients a request targets, each once, in a stable order: client_ids as given, then the members of
 * group_ids; or every client matching the tags (exact) or labels (case-insensitive). Disconnected clients are
 * included: they get a failed child job. Throws 404 for an unknown client or group id, 400 for an empty set.
 */
export async function resolveTargets(
  targeting: Targeting,
  clients: TargetClients,
  groups: ClientGroups,
): Promise<TargetClient[]> {
  const { tags, labels } = targeting;
  if (tags) {
    const found = [...clients.all()].filter((c) =>
      matching(tags.tags, tags.operator, (tag) => c.tags.includes(tag)),
    );
    if (found.length === 0) throw noTargets(`tags (${tags.operator}: ${tags.tags.join(', ')})`);
    return found;
  }
  if (labels) {
    const wanted = labels.labels.map(labelPair);
    const found = [...clients.all()].filter((c) =>
      matching(wanted, labels.operator, (pair) => hasLabel(c, pair)),
    );
    if (found.length === 0) throw noTargets(`labels (${labels.operator}: ${labels.labels.join(', ')})`);
    return found;
  }
  const byId = new Map<string, TargetClient>();
  for (const id of targeting.client_ids ?? []) {
    const client = clients.get(id);
    if (!client) throw clientNotFound(id);
    byId.set(id, client);
  }
  for (const id of await groups.membersOf(targeting.group_ids ?? [])) {
    const client = clients.get(id);
    if (client && !byId.has(id)) byId.set(id, client);
  }
  if (byId.size === 0) throw noTargets('client_ids and group_ids (the groups have no clients)');
  return [...byId.values()];
}

/**
 * The ids `targeting` reaches now without refusing anything: client_ids as given (known or not), the members of
 * the known group_ids, or the clients matching the tags or labels (none: empty). For scope checks of targeting
 * that is resolved later again (schedules).
 */
export async function targetIdsNow(
  targeting: Targeting,
  clients: TargetClients,
  groups: ClientGroups,
): Promise<string[]> {
  if (targeting.tags || targeting.labels) {
    try {
      return (await resolveTargets(targeting, clients, groups)).map((client) => client.id);
    } catch (err) {
      if (isAppError(err) && err.code === ERROR_CODES.noTargets) return [];
      throw err;
    }
  }
  const ids = new Set(targeting.client_ids ?? []);
  for (const group of targeting.group_ids ?? []) {
    let members: readonly string[] = [];
    try {
      members = await groups.membersOf([group]);
    } catch (err) {
      if (!(isAppError(err) && err.kind === 'not_found')) throw err;
    }
    for (const id of members) if (clients.get(id)) ids.add(id);
  }
  return [...ids];
}
