const SCHEMES: Record<string, string> = { 'http:': 'ws:', 'https:': 'wss:', 'ws:': 'ws:', 'wss:': 'wss:' };
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
const BARE = /^(\[[^\]]+\]|[^:/[\]]+):(\d+)(\/.*)?$/;

const FORMS = 'use http://host:port, https://host:port or host:port';

/**
 * Turns the svcd address into the WebSocket URL of its agent listener: `http://` and `https://` become
 * `ws://` and `wss://`, and a bare `host:port` means `http://host:port`.
 */
export function toWebSocketUrl(input: string): string {
  const text = input.trim();
  if (text === '') throw new Error(`it is empty; ${FORMS}`);
  if (!HAS_SCHEME.test(text) && !BARE.test(text))
    throw new Error(`${JSON.stringify(text)} needs a port or a scheme; ${FORMS}`);
  let url: URL;
  try {
    url = new URL(HAS_SCHEME.test(text) ? text : `http://${text}`);
  } catch {
    throw new Error(`${JSON.stringify(text)} is not a valid URL; ${FORMS}`);
  }
  const scheme = SCHEMES[url.protocol];
  if (!scheme) throw new Error(`${JSON.stringify(text)} has an unsupported scheme; ${FORMS}`);
  if (url.hostname === '') throw new Error(`${JSON.stringify(text)} has no host; ${FORMS}`);
  if (url.username || url.password) throw new Error('it must not contain credentials; pass them with --auth');
  if (url.hash) throw new Error(`${JSON.stringify(text)} must not have a #fragment`);
  url.protocol = scheme;
  return url.href;
}
