/** Opens the audit log: its table, the write queue, the syslog copy, agent connect records and the daily purge. */
import type { SvcdConfig } from './config/schema.js';
import { AuditLog } from './core/audit/audit-log.js';
import { scheduleAuditPurge } from './core/audit/audit-retention.js';
import { AuditService } from './core/audit/audit-service.js';
import type { AuditForwarder, AuditLogger } from './core/audit/ports.js';
import { systemClock } from './core/auth/ports.js';
import type { ClientDirectory } from './core/clients/client-directory.js';
import type { ClientEvents } from './core/clients/client-events.js';
import { parseSyslogTarget, SyslogSender } from './infra/syslog-sender.js';
import { SqlAuditRepository } from './storage/audit-repository.js';
import type { Database } from './storage/database.js';

export interface OpenedAudit {
  service: AuditService;
  /** Undefined when `[audit] enabled = false`: nothing is recorded. */
  log: AuditLog | undefined;
  close(): Promise<void>;
}

export function openAudit(
  config: SvcdConfig['audit'],
  deps: {
    database: Database;
    events: ClientEvents;
    clients: ClientDirectory;
    nodeId: string;
    log: AuditLogger;
  },
): OpenedAudit {
  const repository = new SqlAuditRepository(deps.database);
  const service = new AuditService(repository);
  if (!config.enabled) return { service, log: undefined, close: () => Promise.resolve() };
  const forwarders: AuditForwarder[] = config.syslog
    ? [new SyslogSender(parseSyslogTarget(config.syslog), config.syslog_app_name, deps.log)]
    : [];
  const log = new AuditLog({ repository, forwarders, log: deps.log });
  const agentEvent = (action: 'connect' | 'disconnect', clientId: string, nodeId: string) => {
    // In a cluster every node hears every event; the node holding the connection records it.
    if (nodeId !== deps.nodeId) return;
    const record = deps.clients.get(clientId);
    log.record({
      timestamp: systemClock.now(),
      username: record?.client_auth_id ?? '',
      remote_ip: record?.address ?? '',
      application: 'client',
      action,
      outcome: 'success',
      affected_id: clientId,
      client_id: clientId,
      client_hostname: record?.hostname ?? '',
      request: JSON.stringify({
        client_auth_id: record?.client_auth_id ?? '',
        version: record?.version ?? '',
      }),
      response: '{}',
    });
  };
  const unsubscribe = [
    deps.events.subscribe('attached', (e) => agentEvent('connect', e.clientId, e.owner.nodeId)),
    deps.events.subscribe('detached', (e) => agentEvent('disconnect', e.clientId, e.owner.nodeId)),
  ];
  const stopPurge = scheduleAuditPurge(repository, config.retention, systemClock, deps.log);
  return {
    service,
    log,
    async close() {
      for (const stop of unsubscribe) stop();
      stopPurge();
      await log.close();
    },
  };
}
