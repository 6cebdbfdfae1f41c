/*
 * glibc's heap, tuned from node (both are no-ops where the C library is not glibc):
 *
 * trim(): malloc_trim(0). free() gives memory back to the system only from the top of the C heap; after a burst of
 * large short-lived allocations (a tunnel's buffers) the freed middle stays resident. malloc_trim also releases
 * the whole free pages inside the heap. Returns whether any memory was released.
 *
 * keepDefaultThresholds(): mallopt(M_MMAP_THRESHOLD and M_TRIM_THRESHOLD, 128 KiB), glibc's defaults. glibc
 * raises both to the size of any large block freed (the trim threshold to twice that, up to 64 MiB), and a thread's
 * arena keeps a free top below its trim threshold. Node's worker threads (V8's compiler, its GC helpers) then keep
 * ~1 MiB each after their work is done, which malloc_trim does not release (it trims only the main heap's top).
 * Setting them also stops the raising. Returns whether both were set.
 */
#include <node_api.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static napi_value boolean(napi_env env, int value) {
  napi_value result;
  napi_get_boolean(env, value != 0, &result);
  return result;
}

static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#if defined(__GLIBC__)
  released = malloc_trim(0);
#endif
  return boolean(env, released);
}

static napi_value keep_default_thresholds(napi_env env, napi_callback_info info) {
  (void)info;
  int set = 0;
#if defined(__GLIBC__)
  const int bytes = 128 * 1024;
  set = mallopt(M_MMAP_THRESHOLD, bytes) && mallopt(M_TRIM_THRESHOLD, bytes);
#endif
  return boolean(env, set);
}

static int export_function(napi_env env, napi_value exports, const char *name, napi_callback callback) {
  napi_value fn;
  return napi_create_function(env, name, NAPI_AUTO_LENGTH, callback, NULL, &fn) == napi_ok &&
         napi_set_named_property(env, exports, name, fn) == napi_ok;
}

NAPI_MODULE_INIT() {
  if (!export_function(env, exports, "trim", trim)) return NULL;
  if (!export_function(env, exports, "keepDefaultThresholds", keep_default_thresholds)) return NULL;
  return exports;
}
