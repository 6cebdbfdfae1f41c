import type { TunnelOverview } from '@svc/protocol';
import type { ClientTunnel } from '../clients/client-record.js';
import { clientNotFound, type ClientDirectory } from '../clients/client-directory.js';
import type { AgentDispatch } from '../dispatch.js';
import type { UserRecord } from '../users/user-store.js';
import { tunnelErrors as errors } from './tunnel-errors.js';
import { assertMayUseTunnels } from './tunnel-permission.js';
import type { TunnelRequest } from './tunnel-request.js';

/**
 * The tunnels API (spec 4.8): checks who may use tunnels and that the client exists, then has the node holding
 * the client open or close the tunnel (AgentDispatch; on a single svcd, gateway/tunnel-host.ts).
 */
export class TunnelsService {
  constructor(
    private readonly directory: Pick<ClientDirectory, 'get'>,
    private readonly dispatch: Pick<AgentDispatch, 'openTunnel' | 'closeTunnel' | 'hostedTunnels'>,
  ) {}

  /** Opens a tunnel and stores its definition; `apiHost` is the host name the caller reached the API by. */
  async open(
    caller: UserRecord,
    clientId: string,
    request: TunnelRequest,
    apiHost: string,
  ): Promise<ClientTunnel> {
    assertMayUseTunnels(caller);
    if (!this.directory.get(clientId)) throw clientNotFound(clientId);
    return this.dispatch.openTunnel(clientId, { request, owner: caller.username, apiHost });
  }

  /** Deletes a tunnel, open or stored (also of a client that is away). */
  async delete(caller: UserRecord, clientId: string, tunnelId: string, force: boolean): Promise<void> {
    assertMayUseTunnels(caller);
    if (!this.directory.get(clientId)) throw clientNotFound(clientId);
    if (!/^[1-9]\d{0,14}$/.test(tunnelId)) throw errors.notFound(clientId, tunnelId);
    await this.dispatch.closeTunnel(clientId, tunnelId, force);
  }

  /** Every tunnel of the connected clients, open or waiting to be re-opened, with its client (GET /tunnels). */
  async overview(caller: UserRecord): Promise<TunnelOverview[]> {
    assertMayUseTunnels(caller);
    const hosted = await this.dispatch.hostedTunnels();
    return hosted.map((tunnel) => ({
      ...tunnel,
      client_name: this.directory.get(tunnel.client_id)?.name ?? '',
    }));
  }
}
