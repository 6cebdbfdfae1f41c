/**
 * GET /api/v1/docs: a self-contained page (no CDN: svcd often runs without internet access) that reads
 * openapi.json and lists each operation with its parameters and schemas. Text is set with textContent only.
 */
export const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>svcd API</title>
<style>
  body { font-family: sans-serif; margin: 2em; max-width: 70em; }
  h2 { margin-top: 1.5em; border-bottom: 1px solid #ccc; }
  details { margin: 0.3em 0; }
  summary { cursor: pointer; font-family: monospace; }
  .method { display: inline-block; width: 4.5em; font-weight: bold; }
  .note { color: #555; }
  pre { background: #f4f4f4; padding: 0.5em; overflow-x: auto; }
  input { width: 100%; margin: 0.5em 0 1em; }
</style>
</head>
<body>
<h1>svcd API</h1>
<p class="note" id="intro">Loading openapi.json…</p>
<input id="search" placeholder="Filter by path or summary">
<div id="operations"></div>
<script>
  const el = (tag, text, cls) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  };
  const block = (title, value) => {
    const wrap = el('div');
    wrap.append(el('h4', title), el('pre', JSON.stringify(value, null, 2)));
    return wrap;
  };
  const render = (doc) => {
    document.getElementById('intro').textContent = doc.info.title + ' ' + doc.info.version + ': ' + doc.info.description;
    const byTag = new Map();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const tag = (op.tags && op.tags[0]) || 'other';
        if (!byTag.has(tag)) byTag.set(tag, []);
        byTag.get(tag).push({ path, method, op });
      }
    }
    const root = document.getElementById('operations');
    for (const tag of [...byTag.keys()].sort()) {
      root.append(el('h2', tag));
      for (const { path, method, op } of byTag.get(tag)) {
        const details = el('details');
        details.dataset.text = (method + ' ' + path + ' ' + op.summary).toLowerCase();
        const summary = el('summary');
        summary.append(el('span', method.toUpperCase(), 'method'), path + '  ', el('span', op.summary, 'note'));
        details.append(summary);
        if (op.description) details.append(el('p', op.description));
        const auth = op.security ? (op.security.length === 0 ? 'none' : op.security.map((s) => Object.keys(s)[0]).join(' or ')) : 'basicAuth or bearerAuth';
        details.append(el('p', 'Authentication: ' + auth, 'note'));
        if (op.parameters) {
          const list = el('ul');
          for (const p of op.parameters) list.append(el('li', p.in + ' ' + p.name + (p.description ? ': ' + p.description : '')));
          details.append(el('h4', 'Parameters'), list);
        }
        if (op.requestBody) details.append(block('Request body', op.requestBody.content['application/json'].schema));
        for (const [status, response] of Object.entries(op.responses)) {
          const content = response.content && Object.values(response.content)[0];
          const title = 'Response ' + status + ': ' + response.description;
          details.append(content ? block(title, content.schema) : el('h4', title));
        }
        root.append(details);
      }
    }
  };
  document.getElementById('search').oninput = (event) => {
    const words = event.target.value.toLowerCase();
    for (const d of document.querySelectorAll('details')) d.hidden = !d.dataset.text.includes(words);
  };
  fetch('openapi.json')
    .then((res) => res.json())
    .then(render)
    .catch((err) => { document.getElementById('intro').textContent = 'Could not load openapi.json: ' + err; });
</script>
</body>
</html>
`;
