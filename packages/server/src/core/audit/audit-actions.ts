/**
 * What an API request is in audit terms: OpenRPort's application names (openrport-notes §1.2.10) from the route
 * pattern, and the action from the method (create, update, delete, read) or the route (execute.start for runs,
 * success/failed for logins, init/lock/unlock for the vault).
 */
export interface AuditKind {
  application: string;
  action: string;
}

/** Route patterns (without /api/v1) and their application, most specific first. */
const APPLICATIONS: readonly [RegExp, string][] = [
  [/^\/(login|logout)$/, 'auth.user'],
  [/^\/verify-2fa$/, 'auth.user.2fa'],
  [/^\/me\/totp-secret/, 'auth.user.totp'],
  [/^\/me\/tokens?(\/|-|$)/, 'auth.user.me.token'],
  [/^\/me\/views/, 'auth.user.me.view'],
  [/^\/me(\/|$)/, 'auth.user.me'],
  [/^\/users/, 'auth.user'],
  [/^\/user-groups/, 'auth.user.group'],
  [/^\/clients-auth/, 'client.auth'],
  [/^\/client-groups/, 'client.group'],
  [/^\/clients\/:[a-z_]+\/tunnels/, 'client.tunnel'],
  [/^\/clients\/:[a-z_]+\/acl/, 'client.acl'],
  [/^\/(clients\/:[a-z_]+\/)?commands/, 'client.command'],
  [/^\/(clients\/:[a-z_]+\/)?scripts/, 'client.script'],
  [/^\/clients/, 'client'],
  [/^\/tunnels/, 'client.tunnel'],
  [/^\/library\/commands/, 'library.command'],
  [/^\/library\/scripts/, 'library.script'],
  [/^\/vault/, 'vault'],
  [/^\/schedules/, 'schedule'],
  [/^\/files|^\/uploads/, 'uploads'],
];

const VERBS: Record<string, string> = {
  GET: 'read',
  POST: 'create',
  PUT: 'update',
  PATCH: 'update',
  DELETE: 'delete',
};

/** The route pattern as registered (`/clients/:id/commands`), without the API prefix. */
export function auditKindOf(method: string, route: string, ok: boolean): AuditKind {
  const application = APPLICATIONS.find(([pattern]) => pattern.test(route))?.[1] ?? route.split('/')[1] ?? '';
  if (route === '/login' || route === '/verify-2fa')
    return { application, action: ok ? 'success' : 'failed' };
  if (route === '/logout') return { application, action: 'logout' };
  if (method === 'POST' && /(^|\/)(commands|scripts)(\/:jid\/rerun)?$/.test(route))
    return { application, action: 'execute.start' };
  if (route === '/vault-admin/init') return { application, action: 'init' };
  if (route === '/vault-admin/sesame')
    return { application, action: method === 'DELETE' ? 'lock' : 'unlock' };
  return { application, action: VERBS[method] ?? method.toLowerCase() };
}
