import { Pagination } from '@mantine/core';

/**
 * The pages of a server-paged list, shown only when there is more than one; every control is named for screen
 * readers ("Next page", "Page 3").
 */
export function ListPager(props: {
  count: number;
  pageSize: number;
  page: number;
  onPage(page: number): void;
}) {
  if (props.count <= props.pageSize) return null;
  return (
    <Pagination
      total={Math.ceil(props.count / props.pageSize)}
      value={props.page}
      onChange={(page) => props.onPage(page)}
      getControlProps={(control) => ({ 'aria-label': `${control} page` })}
      getItemProps={(n) => ({ 'aria-label': `Page ${n}` })}
    />
  );
}
