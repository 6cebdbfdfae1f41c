import { existsSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * A static web UI served at `/` of the API listener: svc's own console (`packages/web`'s build), or another UI
 * from `[api] doc_root`.
 */
export interface StaticUi {
  root: string;
  /** Our console gets a strict CSP and immutable hashed assets; another UI's needs are unknown to us. */
  kind: 'console' | 'doc_root';
}

/** Where `packages/web` builds the console (same depth from `src/http` and `dist/http`). */
export const CONSOLE_BUILD_DIR = fileURLToPath(new URL('../../../web/dist', import.meta.url));

/**
 * The console runs only its own bundled script and talks only to this origin; Mantine writes its theme
 * variables in a style element, hence `'unsafe-inline'` for styles (never for scripts).
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const IMMUTABLE = 'public, max-age=31536000, immutable';

type HeaderTarget = { setHeader(name: string, value: string): unknown };

function consoleHeaders(res: HeaderTarget, filePath: string): void {
  res.setHeader('content-security-policy', CONSOLE_CSP);
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  // Vite names every file under assets/ by its content hash; everything else (index.html) is checked each time.
  const hashed = filePath.includes(`${sep}assets${sep}`);
  res.setHeader('cache-control', hashed ? IMMUTABLE : 'no-cache');
}

function docRootHeaders(res: HeaderTarget): void {
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('cache-control', 'no-cache');
}

/** Whether the UI's folder holds a built page; svcd starts without the console when it does not. */
export const staticUiReady = (ui: StaticUi): boolean => existsSync(join(ui.root, 'index.html'));

/**
 * Registers one GET/HEAD route per file found at start (so unknown API paths keep their JSON 404 and other
 * methods their 405) and returns the deep-link fallback for the not-found handler.
 */
export async function serveStaticUi(app: FastifyInstance, ui: StaticUi): Promise<SpaFallback> {
  await app.register(fastifyStatic, {
    root: ui.root,
    prefix: '/',
    wildcard: false,
    cacheControl: false,
    etag: true,
    lastModified: true,
    setHeaders: ui.kind === 'console' ? consoleHeaders : docRootHeaders,
  });
  return (request, reply) => {
    if (!isPageRequest(request)) return false;
    void reply.sendFile('index.html');
    return true;
  };
}

/** Answers a request no route has when it is the UI's own (deep link); false leaves it to the JSON 404. */
export type SpaFallback = (request: FastifyRequest, reply: FastifyReply) => boolean;

/** A browser navigating to a deep link: GET or HEAD, outside the API, asking for a page (not a missing asset). */
function isPageRequest(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const path = request.url.split('?')[0] ?? '';
  if (path === '/api' || path.startsWith('/api/')) return false;
  if (path.startsWith('/assets/')) return false;
  return (request.headers.accept ?? '').includes('text/html');
}
