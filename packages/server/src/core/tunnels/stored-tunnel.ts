import { parseAcl } from './acl.js';
import type { StoredTunnel } from './ports.js';
import type { Tunnel } from './tunnel.js';

export function toStored(clientId: string, tunnel: Tunnel): StoredTunnel {
  const { request } = tunnel;
  return {
    clientId,
    id: Number(tunnel.id),
    lhost: tunnel.lhost,
    lport: tunnel.lport,
    lportRandom: tunnel.lportRandom,
    rhost: request.remote.host,
    rport: request.remote.port,
    acl: request.acl?.text ?? null,
    idleTimeoutMinutes: request.idleTimeoutMinutes,
    autoCloseMs: request.autoCloseMs ?? null,
    closeAt: tunnel.closeAt ?? null,
    scheme: request.scheme,
    owner: tunnel.owner,
    apiHost: tunnel.apiHost,
    createdAt: tunnel.createdAt.getTime(),
  };
}

/** The definition of a stored tunnel, not open; throws when its acl no longer parses. */
export function fromStored(row: StoredTunnel): Tunnel {
  return {
    id: String(row.id),
    request: {
      remote: { host: row.rhost, port: row.rport },
      local: row.lportRandom ? undefined : { host: row.lhost, port: row.lport },
      acl: row.acl === null ? undefined : parseAcl(row.acl),
      idleTimeoutMinutes: row.idleTimeoutMinutes,
      autoCloseMs: row.autoCloseMs ?? undefined,
      // The target was checked when the tunnel was created; a re-creation opens it whether it listens or not.
      checkPort: false,
      scheme: row.scheme,
    },
    lhost: row.lhost,
    lport: row.lport,
    lportRandom: row.lportRandom,
    createdAt: new Date(row.createdAt),
    closeAt: row.closeAt ?? undefined,
    owner: row.owner,
    apiHost: row.apiHost,
  };
}
