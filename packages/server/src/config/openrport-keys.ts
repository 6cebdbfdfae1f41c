import type { ToleratedKeys } from '@svc/platform';

/**
 * Settings of OpenRPort's `rportd.conf` that svcd does not implement. A config written for OpenRPort starts with a
 * warning per key instead of failing; keys nobody knows stay errors. When svcd implements one, it moves into the
 * schema (a test keeps this list and the schema apart).
 */
export const OPENRPORT_KEYS: ToleratedKeys = {
  product: 'OpenRPort',
  sections: ['monitoring', 'notifications', 'caddy-integration', 'plus-plugin', 'plus-license', 'plus-oauth'],
  keys: {
    // svcd sends to each user's two_fa_send_to (their Pushover user key); OpenRPort's one key is not needed.
    pushover: ['user_key'],
    server: [
      'allow_root',
      'pairing_url',
      'auth_multiuse_creds',
      'equate_clientauthid_clientid',
      'proxy',
      'sqlite_wal',
      'check_clients_connection_interval',
      'check_clients_connection_timeout',
      'max_request_bytes_client',
      'run_remote_cmd_timeout_sec',
      'max_failed_login',
      'ban_time',
      'tunnel_host',
      'tunnel_proxy_cert_file',
      'tunnel_proxy_key_file',
      'tunnel_enable_acme',
      'tunnel_cors',
      'novnc_root',
      'guacd_address',
      'jobs_max_results',
      'acme_http_port',
      'cleanup_lost_clients',
      'keep_lost_clients',
      'cleanup_clients_interval',
      'max_request_bytes',
      'max_filepush_size',
    ],
    api: [
      'allow_root',
      'base_url',
      'enable_acme',
      'access_log_file',
      'auth_group_details_table',
      'two_fa_send_timeout',
      'password_min_length',
      'password_zxcvbn_minscore',
      'max_filepush_size',
      'cors',
      'enable_audit_log',
      'use_ip_obfuscation',
      'audit_log_rotation',
    ],
  },
};
