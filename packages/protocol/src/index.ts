export * from './errors.js';
export * from './version.js';
export * from './api/envelope.js';
export * from './api/status.js';
export * from './api/users.js';
export * from './list-query.js';
export * from './agent/messages.js';
export * from './api/clients-auth.js';
