import { z } from 'zod';

/** A URI scheme given when opening a tunnel (`scheme` query parameter): free text, as OpenRPort takes it. */
export const MAX_TUNNEL_SCHEME_LENGTH = 15;

/**
 * A tunnel as the API shows it: the answer of `PUT /clients/{id}/tunnels` and each element of a client record's
 * `tunnels`. Ports are strings (spec 2.12, as OpenRPort sends them).
 */
export const tunnelSchema = z.strictObject({
  /** Per-client counter: "1", "2", ... */
  id: z.string(),
  lhost: z.string(),
  lport: z.string(),
  rhost: z.string(),
  rport: z.string(),
  /** e.g. ssh, rdp, vnc, http, https; null = none. */
  scheme: z.string().max(MAX_TUNNEL_SCHEME_LENGTH).nullable(),
  /** Addresses and CIDRs allowed to connect, comma-separated; null = anyone. */
  acl: z.string().nullable(),
  /** 0 = never. */
  idle_timeout_minutes: z.number().int().min(0),
  /** Seconds after creation at which the tunnel closes; null = never. */
  auto_close: z.number().min(0).nullable(),
  /** `<scheme>://<host>:<lport>`; null without a scheme. */
  tunnel_url: z.string().nullable(),
  /** RFC 3339. */
  created_at: z.string(),
});
export type TunnelData = z.infer<typeof tunnelSchema>;

/** An element of GET /tunnels: a tunnel with its client, who opened it and its timers. */
export const tunnelOverviewSchema = tunnelSchema.extend({
  client_id: z.string(),
  client_name: z.string(),
  /** Username of whoever opened it. */
  owner: z.string(),
  /** Whether it listens now (false while it waits to be re-opened, e.g. its port was taken). */
  open: z.boolean(),
  /** TCP connections relayed now. */
  active_connections: z.number().int().min(0),
  /** RFC 3339 time at which the idle timeout closes it; null while in use or without an idle timeout. */
  idle_close_at: z.string().nullable(),
  /** RFC 3339 time of the auto-close; null = never. */
  close_at: z.string().nullable(),
});
export type TunnelOverview = z.infer<typeof tunnelOverviewSchema>;
