import { AppError, ERROR_CODES, MAX_TUNNEL_SCHEME_LENGTH, type ErrorItem } from '@svc/protocol';
import { parseAcl, type Acl } from './acl.js';
import { parseIp } from './ip-address.js';
import { schemeForPort } from './tunnel-url.js';

export interface Endpoint {
  host: string;
  port: number;
}

/** A validated `PUT /clients/{id}/tunnels` request. */
export interface TunnelRequest {
  /** Target as seen from the client; host defaults to 127.0.0.1. */
  remote: Endpoint;
  /** Server address to listen on; absent = a free port of the pool on 0.0.0.0. */
  local: Endpoint | undefined;
  acl: Acl | undefined;
  /** 0 = never. */
  idleTimeoutMinutes: number;
  /** Undefined = never. */
  autoCloseMs: number | undefined;
  checkPort: boolean;
  /** URI scheme of the service behind the tunnel (ssh, rdp, ...); null = none. */
  scheme: string | null;
}

export const DEFAULT_REMOTE_HOST = '127.0.0.1';
export const DEFAULT_LOCAL_HOST = '0.0.0.0';
export const DEFAULT_IDLE_TIMEOUT_MINUTES = 5;
export const MAX_IDLE_TIMEOUT_MINUTES = 7 * 24 * 60;
export const MAX_AUTO_CLOSE_MS = 31 * 86_400_000;

const PARAMS = [
  'remote',
  'local',
  'acl',
  'idle-timeout-minutes',
  'skip-idle-timeout',
  'auto-close',
  'check_port',
  'scheme',
];

const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

class Problems {
  readonly items: ErrorItem[] = [];
  add(title: string, detail: string, code: string = ERROR_CODES.invalidQuery): undefined {
    this.items.push({ code, title, detail });
    return undefined;
  }
}

function parsePort(name: string, text: string, problems: Problems): number | undefined {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (port >= 1 && port <= 65535) return port;
  return problems.add(`${name} port must be a number from 1 to 65535`, `got ${JSON.stringify(text)}`);
}

/** `[host:]port`, with IPv6 hosts in brackets; undefined (and a problem noted) when malformed. */
function parseEndpoint(
  name: string,
  text: string,
  defaultHost: string,
  problems: Problems,
): Endpoint | undefined {
  const form = `use [host:]port, e.g. ${name}=22, ${name}=192.0.2.10:22 or ${name}=[2001:db8::1]:22`;
  let host: string;
  let portText: string | undefined;
  const bracket = /^\[([^\]]*)\](?::(.*))?$/.exec(text);
  if (bracket) {
    host = bracket[1] ?? '';
    portText = bracket[2];
    if (!host.includes(':') || !parseIp(host))
      return problems.add(
        `${name} host must be an IPv6 address inside brackets`,
        `got ${JSON.stringify(text)}`,
      );
  } else {
    const colons = text.split(':').length - 1;
    if (colons > 1)
      return problems.add(
        `${name} must put an IPv6 address in brackets`,
        `got ${JSON.stringify(text)}; ${form}`,
      );
    if (colons === 0 && /^\d+$/.test(text)) return withPort(name, defaultHost, text, problems);
    const colon = text.indexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    portText = colon < 0 ? undefined : text.slice(colon + 1);
    if (host !== '' && !HOSTNAME.test(host) && !parseIp(host))
      return problems.add(
        `${name} host is not an IP address or host name`,
        `got ${JSON.stringify(host)}; ${form}`,
      );
  }
  if (portText === undefined)
    return problems.add(`${name} has no port`, `got ${JSON.stringify(text)}; ${form}`);
  return withPort(name, host === '' ? defaultHost : host, portText, problems);
}

function withPort(name: string, host: string, portText: string, problems: Problems): Endpoint | undefined {
  const port = parsePort(name, portText, problems);
  return port === undefined ? undefined : { host, port };
}

const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `2h30m`, `1d`, `500ms` or `0`; undefined when malformed. */
export function parseDurationMs(text: string): number | undefined {
  if (text === '0') return 0;
  if (text === '') return undefined;
  let ms = 0;
  DURATION_PART.lastIndex = 0;
  while (DURATION_PART.lastIndex < text.length) {
    const match = DURATION_PART.exec(text);
    if (!match) return undefined;
    ms += Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? NaN);
  }
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

function flag(name: string, text: string | undefined, fallback: boolean, problems: Problems): boolean {
  if (text === undefined || text === '') return fallback;
  if (text === 'true' || text === '1') return true;
  if (text === 'false' || text === '0') return false;
  problems.add(`${name} must be true or false`, `got ${JSON.stringify(text)}`);
  return fallback;
}

function idleTimeout(query: Record<string, string>, problems: Problems): number {
  const minutes = query['idle-timeout-minutes'];
  const skip = flag('skip-idle-timeout', query['skip-idle-timeout'], false, problems);
  if (skip && minutes !== undefined)
    problems.add(
      'idle-timeout-minutes and skip-idle-timeout=true conflict',
      'give one of them: skip-idle-timeout=true is the same as idle-timeout-minutes=0',
    );
  if (skip) return 0;
  if (minutes === undefined) return DEFAULT_IDLE_TIMEOUT_MINUTES;
  const value = /^\d{1,6}$/.test(minutes) ? Number(minutes) : NaN;
  if (value >= 0 && value <= MAX_IDLE_TIMEOUT_MINUTES) return value;
  problems.add(
    `idle-timeout-minutes must be a whole number from 0 to ${MAX_IDLE_TIMEOUT_MINUTES} (7 days)`,
    `got ${JSON.stringify(minutes)}; 0 = never`,
  );
  return DEFAULT_IDLE_TIMEOUT_MINUTES;
}

function autoClose(text: string | undefined, problems: Problems): number | undefined {
  if (text === undefined || text === '') return undefined;
  const ms = parseDurationMs(text);
  if (ms === undefined || ms > MAX_AUTO_CLOSE_MS) {
    problems.add(
      'auto-close must be a duration from 0 to 31d',
      `got ${JSON.stringify(text)}; e.g. 90s, 30m, 2h30m or 7d; 0 = never`,
    );
    return undefined;
  }
  return ms === 0 ? undefined : ms;
}

/**
 * `scheme`: free text up to 15 characters; empty = none; absent = the scheme of a well-known target port
 * (22 ssh, 80 http, 443 https, 3389 rdp, 5900 vnc), else none.
 */
function scheme(text: string | undefined, remote: Endpoint | undefined, problems: Problems): string | null {
  if (text === undefined) return remote ? schemeForPort(remote.port) : null;
  if (text === '') return null;
  if (text.length <= MAX_TUNNEL_SCHEME_LENGTH) return text;
  problems.add(
    `Invalid URI scheme: scheme exceeds the max length of ${MAX_TUNNEL_SCHEME_LENGTH} characters`,
    `got ${text.length} characters; give a short name such as ssh, rdp, vnc, http or https, or leave it empty`,
    ERROR_CODES.uriSchemeTooLong,
  );
  return null;
}

/** Reads the query of `PUT /clients/{id}/tunnels`; a 400 lists every problem, each naming its parameter. */
export function parseTunnelRequest(raw: Record<string, unknown>): TunnelRequest {
  const problems = new Problems();
  const query: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (!PARAMS.includes(name))
      problems.add(`Unknown query parameter ${name}`, `tunnels take ${PARAMS.join(', ')}`);
    else if (typeof value !== 'string')
      problems.add(`${name} must be given once`, `got ${JSON.stringify(value)}`);
    else query[name] = value;
  }
  const remoteText = query.remote;
  const remote =
    remoteText === undefined || remoteText === ''
      ? problems.add('remote is required', 'the target on the client as [host:]port, e.g. remote=22')
      : parseEndpoint('remote', remoteText, DEFAULT_REMOTE_HOST, problems);
  const local =
    query.local === undefined || query.local === ''
      ? undefined
      : parseEndpoint('local', query.local, DEFAULT_LOCAL_HOST, problems);
  let acl: Acl | undefined;
  if (query.acl !== undefined && query.acl !== '') {
    try {
      acl = parseAcl(query.acl);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      problems.add(err.message, err.detail, err.code);
    }
  }
  const request = {
    idleTimeoutMinutes: idleTimeout(query, problems),
    autoCloseMs: autoClose(query['auto-close'], problems),
    checkPort: flag('check_port', query.check_port, true, problems),
    scheme: scheme(query.scheme, remote, problems),
  };
  const [first, ...rest] = problems.items;
  if (first) throw new AppError('invalid', first.code, first.title, first.detail, rest);
  if (!remote) throw new Error('unreachable: remote was validated');
  return { remote, local, acl, ...request };
}
