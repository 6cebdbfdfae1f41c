import { z } from 'zod';

/** `data` of GET /status (spec 2.1). */
export const statusDataSchema = z.object({
  connect_url: z.array(z.string()),
  fingerprint: z.string(),
  clients_connected: z.number().int(),
  clients_disconnected: z.number().int(),
  version: z.string(),
  /** When this svcd process started (RFC 3339) and whole seconds since. */
  started_at: z.string(),
  uptime_sec: z.number().int().min(0),
  /** Open file descriptors of svcd (each agent holds one) and its soft limit; null where svcd cannot tell. */
  descriptors_used: z.number().int().nullable(),
  descriptors_limit: z.number().int().nullable(),
  /** New agents are refused with 503 from this many descriptors on; the rest is kept for the API and tunnels. */
  descriptors_agent_high_water: z.number().int().nullable(),
  /** Only when `[cluster] enabled`: this node and every node that renewed its presence lately. */
  cluster: z
    .object({
      node_id: z.string().describe('The node that answered.'),
      nodes: z.array(
        z.object({
          node_id: z.string(),
          /** `live`: renewed within two heartbeats; `late`: not since, and gone once its presence expires. */
          state: z.enum(['live', 'late']),
          advertise_address: z.string(),
          started_at: z.string(),
          seen_at: z.string(),
        }),
      ),
    })
    .optional(),
});
export type StatusData = z.infer<typeof statusDataSchema>;

/** `two_fa` of the login response (spec 2.4): where the code went, or the authenticator-app state. */
export const twoFaInfoSchema = z.object({
  send_to: z.string(),
  delivery_method: z.string(),
  /** Authenticator-app mode: `pending` (no secret yet) or `exists`; empty for delivered codes. */
  totp_key_status: z.enum(['', 'pending', 'exists']),
});
export type TwoFaInfo = z.infer<typeof twoFaInfoSchema>;

/** `data` of GET /login and POST /verify-2fa (spec 2.4); two_fa is null once no second factor is due. */
export const loginDataSchema = z.object({
  token: z.string(),
  two_fa: twoFaInfoSchema.nullable(),
});
export type LoginData = z.infer<typeof loginDataSchema>;
