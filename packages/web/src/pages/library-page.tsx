import {
  Badge,
  Group,
  Loader,
  Pagination,
  Select,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  UnstyledButton,
} from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { getRouteApi } from '@tanstack/react-router';
import { useState } from 'react';
import {
  LIBRARY_PAGE_SIZE,
  libraryListQueryOptions,
  type LibraryScript,
  type LibrarySearch,
} from '../api/library-queries.js';
import { ErrorAlert } from '../components/error-alert.js';
import { AnchorLink, ButtonLink } from '../components/links.js';
import { TimeAgo } from '../components/time-ago.js';
import { useAllows } from '../session/use-rights.js';

const route = getRouteApi('/console/library');

function TagBadges({ tags, onPick }: { tags: string[]; onPick: (tag: string) => void }) {
  return (
    <Group gap={4}>
      {tags.map((tag) => (
        <UnstyledButton key={tag} onClick={() => onPick(tag)} aria-label={`Show scripts tagged ${tag}`}>
          <Badge variant="outline" size="sm" tt="none">
            {tag}
          </Badge>
        </UnstyledButton>
      ))}
    </Group>
  );
}

function ScriptRows({ scripts, pickTag }: { scripts: LibraryScript[]; pickTag: (tag: string) => void }) {
  return (
    <Table.ScrollContainer minWidth={640}>
      <Table striped highlightOnHover>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Interpreter</Table.Th>
            <Table.Th>Tags</Table.Th>
            <Table.Th>Updated</Table.Th>
            <Table.Th>By</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {scripts.map((script) => (
            <Table.Tr key={script.id}>
              <Table.Td>
                <AnchorLink to="/library/$scriptId" params={{ scriptId: script.id }}>
                  {script.name}
                </AnchorLink>
              </Table.Td>
              <Table.Td>{script.interpreter || <Text c="dimmed">client default</Text>}</Table.Td>
              <Table.Td>
                <TagBadges tags={script.tags} onPick={pickTag} />
              </Table.Td>
              <Table.Td>
                <TimeAgo iso={script.updated_at} />
              </Table.Td>
              <Table.Td>{script.updated_by}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/** The script library: search by name, sort, narrow to a tag, open a script to edit or run it. */
export function LibraryPage() {
  const search = route.useSearch();
  const navigate = route.useNavigate();
  const update = (next: Partial<LibrarySearch>) =>
    void navigate({ search: (prev) => ({ ...prev, ...next }), replace: true });
  const [text, setText] = useState(search.q ?? '');
  const pushText = useDebouncedCallback((q: string) => update({ q: q || undefined, page: undefined }), 250);
  const list = useQuery({ ...libraryListQueryOptions(search), placeholderData: keepPreviousData });
  const scripts = (list.data?.data ?? []).filter((s) => !search.tag || s.tags.includes(search.tag));
  const count = list.data?.meta.count ?? 0;
  const filtered = Boolean(search.q || search.tag);
  const mayEdit = useAllows('library');

  return (
    <Stack>
      <Group justify="space-between" align="end">
        <Title order={1}>Script library</Title>
        {mayEdit && <ButtonLink to="/library/new">New script</ButtonLink>}
      </Group>
      <Group align="end" gap="sm">
        <TextInput
          label="Search by name"
          placeholder="backup, cleanup…"
          value={text}
          onChange={(e) => {
            setText(e.currentTarget.value);
            pushText(e.currentTarget.value);
          }}
        />
        <Select
          label="Sort by"
          allowDeselect={false}
          data={[
            { value: 'name', label: 'Name' },
            { value: '-updated_at', label: 'Last updated' },
          ]}
          value={search.sort ?? 'name'}
          onChange={(value) => update({ sort: value === '-updated_at' ? '-updated_at' : undefined })}
        />
        {search.tag && (
          <Badge
            size="lg"
            variant="light"
            tt="none"
            rightSection={
              <UnstyledButton
                aria-label={`Stop filtering on tag ${search.tag}`}
                onClick={() => update({ tag: undefined })}
              >
                ×
              </UnstyledButton>
            }
          >
            tag: {search.tag}
          </Badge>
        )}
        {list.isFetching && <Loader size="xs" role="status" aria-label="Loading scripts" />}
      </Group>
      {list.error && <ErrorAlert error={list.error} />}
      {list.data && (
        <Text size="sm" c="dimmed" aria-live="polite">
          {count} {count === 1 ? 'script' : 'scripts'}
          {search.tag ? `; ${scripts.length} on this page tagged ${search.tag}` : ''}
        </Text>
      )}
      {list.data && scripts.length === 0 ? (
        <Text>
          {filtered
            ? 'No script matches. Change the search or clear the tag.'
            : 'The library is empty. Add a script with "New script"; it can then be run on any client.'}
        </Text>
      ) : (
        <ScriptRows scripts={scripts} pickTag={(tag) => update({ tag })} />
      )}
      {count > LIBRARY_PAGE_SIZE && (
        <Pagination
          total={Math.ceil(count / LIBRARY_PAGE_SIZE)}
          value={search.page ?? 1}
          onChange={(page) => update({ page: page > 1 ? page : undefined })}
        />
      )}
    </Stack>
  );
}
