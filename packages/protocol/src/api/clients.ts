import { z } from 'zod';
import { systemFactsSchema } from '../agent/messages.js';
import { tunnelSchema } from './tunnels.js';

/** A client as GET /clients shows it: the spec 2.12 fields plus connection state, labels and the credential used. */
export const clientSchema = z.object({
  id: z.string(),
  name: z.string(),
  ...systemFactsSchema.shape,
  tags: z.array(z.string()),
  labels: z.record(z.string(), z.string()),
  version: z.string(),
  /** Remote address with port, masked. */
  address: z.string(),
  tunnels: z.array(tunnelSchema),
  connection_state: z.enum(['connected', 'disconnected']),
  /** RFC 3339; when the current or last connection was accepted. */
  connected_at: z.string().nullable(),
  /** RFC 3339; null while connected. */
  disconnected_at: z.string().nullable(),
  client_auth_id: z.string(),
});
export type ClientData = z.infer<typeof clientSchema>;

/** GET /clients items: `groups` (ids of the client's groups) only when fields[clients] asks. */
export const listedClientSchema = clientSchema.extend({ groups: z.array(z.string()).optional() });

/** GET /clients/{id}: every field, `groups` included (as OpenRPort), unless fields[clients] picks some. */
export const clientItemSchema = clientSchema.extend({ groups: z.array(z.string()) });
