import { queryOptions } from '@tanstack/react-query';
import type { GroupParams } from '../lib/group-rules.js';
import { apiRequest } from './client.js';
import type { paths } from './openapi.gen.js';

type GroupList = paths['/api/v1/client-groups']['get']['responses'][200]['content']['application/json'];
export type ClientGroup = Required<GroupList['data'][number]>;
export type GroupPreview =
  paths['/api/v1/client-groups-preview']['post']['responses'][200]['content']['application/json']['data'];

export const clientGroupsQuery = (q: string) =>
  queryOptions({
    queryKey: ['client-groups', q],
    queryFn: () => {
      const query = new URLSearchParams({
        'fields[client_groups]': 'id,description,params,num_clients,num_clients_connected',
        'page[limit]': '500',
      });
      if (q) query.set('filter[id]', `*${q}*`);
      return apiRequest<{ data: ClientGroup[]; meta: { count: number } }>('/client-groups', { query });
    },
  });

export const clientGroupQuery = (id: string) =>
  queryOptions({
    queryKey: ['client-group', id],
    queryFn: () =>
      apiRequest<{ data: ClientGroup }>(`/client-groups/${encodeURIComponent(id)}`).then((r) => r.data),
  });

/** The clients unsaved params would hold (POST /client-groups-preview). */
export const groupPreviewQuery = (params: GroupParams) =>
  queryOptions({
    queryKey: ['client-group-preview', params],
    queryFn: () =>
      apiRequest<{ data: GroupPreview }>('/client-groups-preview', { method: 'POST', body: { params } }).then(
        (r) => r.data,
      ),
    retry: false,
  });
