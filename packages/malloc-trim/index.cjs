'use strict';
// The native functions when they were built (see package.json's install script), else null.
let native = null;
try {
  native = require('./build/Release/malloc_trim.node');
} catch {
  // Not built here (no compiler, or a platform node-gyp could not build for): callers go on without it.
}
module.exports = {
  trim: native ? native.trim : null,
  keepDefaultThresholds: native ? native.keepDefaultThresholds : null,
};
