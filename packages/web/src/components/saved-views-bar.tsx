import { Button, CopyButton, Group, Select, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { deleteView, saveView, savedViewsQuery, updateView, type SavedView } from '../api/fleet.js';
import { searchOfView, viewSearchString, type ClientSearch } from '../lib/client-filters.js';
import { columnIdsOf } from './client-columns.js';
import { ErrorAlert } from './error-alert.js';

type Editing = { kind: 'save' } | { kind: 'rename'; view: SavedView } | undefined;

/** What a view stores of the current page. */
const viewFieldsOf = (search: ClientSearch) => ({
  search: viewSearchString(search),
  columns: columnIdsOf(search.cols),
  sort: search.sort ?? '',
});

/** The link that opens the page as the view shows it, for anyone (the URL carries filter, sort and columns). */
export const viewLink = (view: SavedView): string => {
  const params = new URLSearchParams(view.search);
  params.set('view', view.id);
  return `${window.location.origin}/clients?${params.toString()}`;
};

/**
 * Saved views of the clients page: pick one, save the current filter, columns and sort as a new view or into
 * the picked one, rename, delete, copy its link.
 */
export function SavedViewsBar({
  search,
  open,
}: {
  search: ClientSearch;
  /** Shows the page as a search describes it. */
  open: (search: ClientSearch) => void;
}) {
  const queryClient = useQueryClient();
  const views = useQuery(savedViewsQuery);
  const [editing, setEditing] = useState<Editing>();
  const [name, setName] = useState('');
  const [outcome, setOutcome] = useState<string>();
  const current = views.data?.find((v) => v.id === search.view);
  const changed = current !== undefined && current.search !== viewSearchString(search);
  const refresh = () => queryClient.invalidateQueries({ queryKey: savedViewsQuery.queryKey });

  const save = useMutation({
    mutationFn: async () => {
      const trimmed = name.trim();
      if (editing?.kind === 'rename') return updateView(editing.view.id, { name: trimmed });
      return saveView({ name: trimmed, page: 'clients', ...viewFieldsOf(search) });
    },
    onSuccess: async (view) => {
      await refresh();
      setOutcome(
        editing?.kind === 'rename' ? `Renamed to “${view.name}”.` : `Saved the view “${view.name}”.`,
      );
      setEditing(undefined);
      open(searchOfView(view.search, view.id));
    },
  });
  const store = useMutation({
    mutationFn: (view: SavedView) => updateView(view.id, viewFieldsOf(search)),
    onSuccess: async (view) => {
      await refresh();
      setOutcome(`Updated the view “${view.name}”.`);
      open(searchOfView(view.search, view.id));
    },
  });
  const remove = useMutation({
    mutationFn: (view: SavedView) => deleteView(view.id).then(() => view),
    onSuccess: async (view) => {
      await refresh();
      setOutcome(`Deleted the view “${view.name}”.`);
      const { view: _dropped, ...rest } = search;
      open(rest);
    },
  });
  const failure = save.error ?? store.error ?? remove.error ?? views.error;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setOutcome(undefined);
    save.mutate();
  };

  return (
    <>
      <Group align="end" gap="sm" wrap="wrap">
        <Select
          label="Saved view"
          placeholder={views.data?.length === 0 ? 'none saved yet' : 'pick a view'}
          data={(views.data ?? []).map((v) => ({ value: v.id, label: v.name }))}
          value={current ? current.id : null}
          onChange={(id) => {
            const view = views.data?.find((v) => v.id === id);
            setOutcome(undefined);
            if (view) open(searchOfView(view.search, view.id));
          }}
          w={{ base: '100%', xs: 220 }}
          clearable
          onClear={() => {
            const { view: _dropped, ...rest } = search;
            open(rest);
          }}
        />
        <Button
          variant="light"
          onClick={() => {
            setName('');
            setEditing({ kind: 'save' });
            save.reset();
          }}
        >
          Save as view…
        </Button>
        {current && (
          <>
            {changed && (
              <Button variant="light" loading={store.isPending} onClick={() => store.mutate(current)}>
                Update “{current.name}”
              </Button>
            )}
            <Button
              variant="default"
              onClick={() => {
                setName(current.name);
                setEditing({ kind: 'rename', view: current });
                save.reset();
              }}
            >
              Rename
            </Button>
            <Button
              variant="default"
              color="red"
              loading={remove.isPending}
              onClick={() => {
                setOutcome(undefined);
                if (window.confirm(`Delete the view “${current.name}”?`)) remove.mutate(current);
              }}
            >
              Delete view
            </Button>
            <CopyButton value={viewLink(current)}>
              {({ copied, copy }) => (
                <Button variant="default" onClick={copy} color={copied ? 'teal.9' : undefined}>
                  {copied ? 'Link copied' : 'Copy link'}
                </Button>
              )}
            </CopyButton>
          </>
        )}
      </Group>
      {editing && (
        <form onSubmit={submit}>
          <Group align="end" gap="sm">
            <TextInput
              label={editing.kind === 'rename' ? 'New name of the view' : 'Name of the new view'}
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              maxLength={100}
              required
              data-autofocus
              w={{ base: '100%', xs: 260 }}
            />
            <Button type="submit" loading={save.isPending} disabled={name.trim() === ''}>
              {editing.kind === 'rename' ? 'Rename' : 'Save'}
            </Button>
            <Button variant="subtle" onClick={() => setEditing(undefined)}>
              Cancel
            </Button>
          </Group>
        </form>
      )}
      {failure && <ErrorAlert error={failure} />}
      {outcome && (
        <Text size="sm" c="teal.9" role="status">
          {outcome}
        </Text>
      )}
    </>
  );
}
