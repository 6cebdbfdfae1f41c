import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { documented, type ApiOperation } from '../openapi/operation.js';

const PAGE_OPERATION: ApiOperation = {
  tag: 'documentation',
  summary: 'A page that runs a script over /ws/scripts (enable_ws_test_endpoints)',
  responses: [{ status: 200, description: 'OK', body: z.string(), contentType: 'text/html' }],
};

/**
 * GET /test/scripts/ui (spec 4.8 item 6): a small page that runs a script on clients through /ws/scripts and
 * shows the messages as they arrive. Public like OpenRPort's, since it holds no data: the token is typed in.
 */
export function wsTestPageRoutes(app: FastifyInstance): void {
  app.get('/test/scripts/ui', documented(PAGE_OPERATION, { public: true }), async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(PAGE),
  );
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>svcd: run a script over WebSocket</title>
<style>
  body { font-family: sans-serif; margin: 2em; max-width: 60em; }
  label { display: block; margin-top: 0.8em; }
  input, textarea { width: 100%; font-family: monospace; }
  pre { background: #f4f4f4; padding: 0.5em; white-space: pre-wrap; }
</style>
</head>
<body>
<h1>Run a script over WebSocket</h1>
<label>Access token (from GET /api/v1/login) <input id="token"></label>
<label>Client ids, comma-separated <input id="clients"></label>
<label>Interpreter (empty: the default) <input id="interpreter"></label>
<label>Script <textarea id="script" rows="8">echo hello from $(hostname)</textarea></label>
<label><input type="checkbox" id="concurrent" style="width:auto"> execute concurrently</label>
<button id="run">Run</button>
<pre id="out"></pre>
<script>
  const $ = (id) => document.getElementById(id);
  const show = (line) => { $('out').textContent += line + '\\n'; };
  const base64 = (text) => {
    let binary = '';
    for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
    return btoa(binary);
  };
  $('run').onclick = () => {
    $('out').textContent = '';
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const url = scheme + '//' + location.host + '/api/v1/ws/scripts?access_token=' + encodeURIComponent($('token').value);
    const ws = new WebSocket(url);
    ws.onopen = () => ws.send(JSON.stringify({
      client_ids: $('clients').value.split(',').map((s) => s.trim()).filter(Boolean),
      script: base64($('script').value),
      interpreter: $('interpreter').value,
      execute_concurrently: $('concurrent').checked,
    }));
    ws.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.errors) return show('error: ' + message.errors.map((e) => e.title + ' ' + e.detail).join('; '));
      if (message.finished_at) return show('[' + message.client_id + '] ' + message.status + ' ' + (message.error || ''));
      show('[' + message.client_id + '] ' + (message.result.stdout || message.result.stderr));
    };
    ws.onclose = (event) => show('-- closed (' + event.code + ')');
  };
</script>
</body>
</html>
`;
