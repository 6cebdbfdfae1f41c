import '@mantine/core/styles.css';
import './console.css';
import { MantineProvider } from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from '@tanstack/react-router';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiError } from './api/api-error.js';
import { createConsoleRouter } from './router.js';
import { session } from './session/session.js';
import { theme } from './theme.js';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      // A refused or missing thing does not get better by asking again.
      retry: (count, error) =>
        !(error instanceof ApiError && error.status >= 400 && error.status < 500) && count < 2,
    },
  },
});
const router = createConsoleRouter(queryClient);

// A session that ends (logout, or a 401 on expiry) sends every page through the login guard again.
session.subscribe(() => {
  if (!session.get()) queryClient.clear();
  void router.invalidate();
});

const root = document.getElementById('root');
if (!root) throw new Error('no #root element');
createRoot(root).render(
  <StrictMode>
    <MantineProvider theme={theme} defaultColorScheme="auto">
      <QueryClientProvider client={queryClient}>
        <RouterProvider router={router} />
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
