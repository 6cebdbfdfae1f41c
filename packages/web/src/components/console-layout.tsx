import { AppShell, Burger, Button, Group } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { Outlet, useRouterState } from '@tanstack/react-router';
import { meQuery } from '../api/admin.js';
import { apiRequest } from '../api/client.js';
import { visiblePages } from '../lib/rights.js';
import { NAV_PAGES } from '../nav.js';
import { session } from '../session/session.js';
import { useSession } from '../session/use-session.js';
import { AnchorLink, NavLinkLink } from './links.js';
import { Logo } from './logo.js';
import { SessionRenewal } from './session-renewal.js';

async function logout(): Promise<void> {
  // The token is revoked on the server; the page forgets it either way.
  await apiRequest('/logout', { method: 'DELETE' }).catch(() => undefined);
  session.end('logout');
}

export function ConsoleLayout() {
  const [opened, { toggle, close }] = useDisclosure();
  const current = useSession();
  const pathname = useRouterState({ select: (state) => state.location.pathname });
  const me = useQuery(meQuery);
  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Menu" />
            <Logo />
          </Group>
          <Group gap="sm" wrap="nowrap">
            <AnchorLink to="/account" size="sm" c="dimmed" visibleFrom="xs" data-testid="current-user">
              {current?.username}
            </AnchorLink>
            <Button variant="default" size="xs" onClick={() => void logout()}>
              Log out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Pages">
        {visiblePages(NAV_PAGES, me.data).map((page) => (
          <NavLinkLink
            key={page.to}
            to={page.to}
            label={page.label}
            active={page.to === '/' ? pathname === '/' : pathname.startsWith(page.to)}
            onClick={close}
            variant="filled"
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>
        <SessionRenewal />
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
