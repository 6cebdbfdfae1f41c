import { useRouter } from '@tanstack/react-router';
import type { MouseEvent, ReactNode } from 'react';

/**
 * A link to a client's page as a plain `<a>` (console.css's `.row-link`, drawn like Mantine's Anchor), for the
 * virtualised lists: the router's link component subscribes every row to the router's state. A plain left click
 * navigates inside the console; a modified click (new tab, new window) is the browser's. Hovering preloads the
 * page, as the router's links do.
 */
export function ClientRowLink({
  clientId,
  strong = false,
  children,
}: {
  clientId: string;
  strong?: boolean;
  children: ReactNode;
}) {
  const router = useRouter();
  const target = { to: '/clients/$clientId', params: { clientId } } as const;
  const click = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    void router.navigate(target);
  };
  return (
    <a
      href={`/clients/${encodeURIComponent(clientId)}`}
      className={strong ? 'row-link row-link-strong' : 'row-link'}
      onClick={click}
      onMouseEnter={() => void router.preloadRoute(target).catch(() => undefined)}
    >
      {children}
    </a>
  );
}
