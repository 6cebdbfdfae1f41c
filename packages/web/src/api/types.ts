import type { paths } from './openapi.gen.js';

type Ok<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Body } } } }
  ? Body
  : never;
type Get<P extends keyof paths> = Ok<paths[P]['get']>;

export type StatusData = Get<'/api/v1/status'>['data'];
export type LoginData = Get<'/api/v1/login'>['data'];
export type ClientList = Get<'/api/v1/clients'>;
type ListedClient = ClientList['data'][number];
/** A client with every default field (sparse fieldsets make them all optional in the document). */
export type Client = Required<Omit<ListedClient, 'groups'>> & Pick<ListedClient, 'groups'>;
export type Tunnel = Client['tunnels'][number];
export type Me = Get<'/api/v1/me'>['data'];
export type VaultStatus = Get<'/api/v1/vault-admin'>['data'];
