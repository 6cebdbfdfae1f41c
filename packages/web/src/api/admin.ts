/**
 * The console's calls for accounts: the caller (/me), users, personal API tokens and client credentials. Types
 * come from the generated OpenAPI document; the mutations invalidate the lists they change.
 */
import { queryOptions } from '@tanstack/react-query';
import { apiRequest } from './client.js';
import type { paths } from './openapi.gen.js';

type Json<Op, Status extends number> = Op extends {
  responses: { [S in Status]: { content: { 'application/json': infer Body } } };
}
  ? Body
  : never;
type Body<Op> = Op extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

export type Me = Json<paths['/api/v1/me']['get'], 200>['data'];
export type UserItem = Required<Json<paths['/api/v1/users']['get'], 200>['data'][number]>;
export type CreateUserBody = Body<paths['/api/v1/users']['post']>;
export type UpdateUserBody = Body<paths['/api/v1/users/{username}']['put']>;
export type ApiTokenItem = Json<paths['/api/v1/me/tokens']['get'], 200>['data'][number];
export type CreatedApiToken = Json<paths['/api/v1/me/tokens']['post'], 201>['data'];
export type CreateApiTokenBody = Body<paths['/api/v1/me/tokens']['post']>;
export type UpdateApiTokenBody = Body<paths['/api/v1/me/tokens/{prefix}']['put']>;
export type ClientCredential = Required<Json<paths['/api/v1/clients-auth']['get'], 200>['data'][number]>;
export type UpdateMeBody = Body<paths['/api/v1/me']['put']>;
export type UserGroupItem = Json<paths['/api/v1/user-groups']['get'], 200>['data'][number];
export type UpdateUserGroupBody = Body<paths['/api/v1/user-groups/{name}']['put']>;

/**
 * What a write answers: in force now, or waiting in the user file until svcd reloads it (`meta.takes_effect`).
 */
export interface WriteOutcome {
  pending?: string;
}

const outcomeOf = (answer: unknown): WriteOutcome => {
  const takes = (answer as { meta?: { takes_effect?: unknown } } | undefined)?.meta?.takes_effect;
  return typeof takes === 'string' ? { pending: takes } : {};
};

export const meQuery = queryOptions({
  queryKey: ['me'],
  queryFn: () => apiRequest<{ data: Me }>('/me').then((r) => r.data),
  staleTime: 30_000,
});

export const usersQuery = queryOptions({
  queryKey: ['users'],
  queryFn: () =>
    apiRequest<{ data: UserItem[] }>('/users', { query: new URLSearchParams({ 'page[limit]': '500' }) }).then(
      (r) => r.data,
    ),
  retry: false,
});

export const userGroupsQuery = queryOptions({
  queryKey: ['user-groups'],
  queryFn: () => apiRequest<{ data: UserGroupItem[] }>('/user-groups').then((r) => r.data),
  retry: false,
});

export const apiTokensQuery = queryOptions({
  queryKey: ['api-tokens'],
  queryFn: () => apiRequest<{ data: ApiTokenItem[] }>('/me/tokens').then((r) => r.data),
});

export const credentialsQuery = queryOptions({
  queryKey: ['clients-auth'],
  queryFn: () =>
    apiRequest<{ data: ClientCredential[] }>('/clients-auth', {
      query: new URLSearchParams({ 'page[limit]': '500' }),
    }).then((r) => r.data),
  retry: false,
});

const path = (value: string) => encodeURIComponent(value);

export const adminApi = {
  createUser: async (body: CreateUserBody) => outcomeOf(await apiRequest('/users', { method: 'POST', body })),
  updateUser: async (username: string, body: UpdateUserBody) =>
    outcomeOf(await apiRequest(`/users/${path(username)}`, { method: 'PUT', body })),
  deleteUser: async (username: string) =>
    outcomeOf(await apiRequest(`/users/${path(username)}`, { method: 'DELETE' })),
  saveUserGroup: (name: string, body: UpdateUserGroupBody) =>
    apiRequest(`/user-groups/${path(name)}`, { method: 'PUT', body }),
  deleteUserGroup: (name: string) => apiRequest<void>(`/user-groups/${path(name)}`, { method: 'DELETE' }),
  resetTotp: (username: string) =>
    apiRequest<void>(`/users/${path(username)}/totp-secret`, { method: 'DELETE' }),
  createToken: (body: CreateApiTokenBody) =>
    apiRequest<{ data: CreatedApiToken }>('/me/tokens', { method: 'POST', body }).then((r) => r.data),
  updateToken: (prefix: string, body: UpdateApiTokenBody) =>
    apiRequest(`/me/tokens/${path(prefix)}`, { method: 'PUT', body }),
  revokeToken: (prefix: string) => apiRequest<void>(`/me/tokens/${path(prefix)}`, { method: 'DELETE' }),
  addCredential: (id: string, password: string) =>
    apiRequest('/clients-auth', { method: 'POST', body: { id, password } }),
  deleteCredential: (id: string, force: boolean) =>
    apiRequest<void>(`/clients-auth/${path(id)}`, {
      method: 'DELETE',
      ...(force ? { query: new URLSearchParams({ force: 'true' }) } : {}),
    }),
  updateMe: async (body: UpdateMeBody) => outcomeOf(await apiRequest('/me', { method: 'PUT', body })),
  totpSecret: () => apiRequest<{ secret: string; qr: string }>('/me/totp-secret'),
  createTotpSecret: () => apiRequest<{ secret: string; qr: string }>('/me/totp-secret', { method: 'POST' }),
  deleteTotpSecret: () => apiRequest<void>('/me/totp-secret', { method: 'DELETE' }),
};
