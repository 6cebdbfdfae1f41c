'use strict';
// The native trim() when it was built (see package.json's install script), else null.
let trim = null;
try {
  trim = require('./build/Release/malloc_trim.node').trim;
} catch {
  // Not built here (no compiler, or a platform node-gyp could not build for): callers go on without it.
}
module.exports = { trim };
