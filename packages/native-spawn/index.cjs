'use strict';
// The native spawn when it was built (see package.json's install script) on Linux, else null.
let native = null;
if (process.platform === 'linux') {
  try {
    native = require('./build/Release/native_spawn.node');
  } catch {
    // Not built here (no compiler, or a C library without posix_spawn_file_actions_addchdir_np): callers use node's.
  }
}
module.exports = { spawn: native ? native.spawn : null };
