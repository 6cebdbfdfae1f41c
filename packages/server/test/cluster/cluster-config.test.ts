import { describe, expect, test } from 'vitest';
import { parseSvcdConfig } from '../../src/config/schema.js';
import { problemsOf } from '../config/helpers.js';

const POSTGRES = '[database]\ndb_type = "postgres"\ndb_host = "127.0.0.1"\ndb_name = "svc"\n';

describe('[cluster]', () => {
  test('absent: not enabled, and nothing else needs it', () => {
    const config = parseSvcdConfig('');
    expect(config.cluster).toMatchObject({ enabled: false, nats_url: 'nats://127.0.0.1:4222' });
    expect(config.cluster.node_id).toBeUndefined();
  });

  test('enabled with PostgreSQL: the keys are read, durations in milliseconds', () => {
    const config = parseSvcdConfig(
      `${POSTGRES}[cluster]\nenabled = true\nnode_id = "svcd-1"\nnats_url = "nats://10.0.0.5:4222"\n` +
        'nats_token = "t0k"\nadvertise_address = "svcd-1.example.com"\nheartbeat_interval = "2s"\n',
    );
    expect(config.cluster).toMatchObject({
      enabled: true,
      node_id: 'svcd-1',
      nats_url: 'nats://10.0.0.5:4222',
      nats_token: 't0k',
      advertise_address: 'svcd-1.example.com',
      heartbeat_interval: 2_000,
      nats_prefix: 'svc',
    });
  });

  test('enabled with SQLite: refused, naming the key and why', () => {
    expect(problemsOf('[cluster]\nenabled = true\n')).toEqual([
      expect.stringMatching(
        /^\[cluster\] enabled: cluster mode needs a database the nodes share: .*postgres/,
      ),
    ]);
    expect(problemsOf('[cluster]\nenabled = false\n')).toEqual([]);
  });

  test('bad values name their key', () => {
    const problems = problemsOf(
      `${POSTGRES}[cluster]\nenabled = true\nnode_id = "a.b"\nnats_url = "http://x"\nnats_user = "u"\n` +
        'heartbeat_interval = "10ms"\n',
    ).join('\n');
    expect(problems).toContain('[cluster] node_id: expected 1-64 letters, digits, _ or -');
    expect(problems).toContain('[cluster] nats_url: expected nats://host:port');
    expect(problems).toContain('[cluster] nats_password: nats_user and nats_password go together');
    expect(problems).toContain('[cluster] heartbeat_interval: must be between 100ms and 1m');
  });
});
