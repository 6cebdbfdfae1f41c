import { Anchor, type AnchorProps } from '@mantine/core';
import { useRouter } from '@tanstack/react-router';
import type { ReactNode } from 'react';

/**
 * A link to a console path that another area's routes declare (e.g. `/runs/<jid>`), so it is not in this
 * build's typed route tree: an ordinary `<a href>` that the router follows without reloading the page.
 */
export function PathLink({ href, children, ...props }: AnchorProps & { href: string; children: ReactNode }) {
  const router = useRouter();
  return (
    <Anchor
      {...props}
      href={href}
      onClick={(event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
        event.preventDefault();
        router.history.push(href);
      }}
    >
      {children}
    </Anchor>
  );
}
