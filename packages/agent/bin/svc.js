#!/usr/bin/env node
// CommonJS (see package.json here) running the one-file bundle that `npm run build` makes from dist/: an ES module
// entry would start node's ES module loader, and hundreds of modules cost more, ~12 MB of an idle agent together.
require('../dist/svc.cjs');
