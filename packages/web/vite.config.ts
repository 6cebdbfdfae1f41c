import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The console is served by svcd at `/`; `npm run dev -w @svc/web` proxies the API to a local svcd.
export default defineConfig({
  plugins: [react()],
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // Inline data: URLs would need a looser CSP for fonts; every asset stays a file.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: { '/api': { target: process.env.SVCD_URL ?? 'http://127.0.0.1:3000', ws: true } },
  },
});
