/*
 * trim(): glibc's malloc_trim(0). free() gives memory back to the system only from the top of the C heap; after a
 * burst of large short-lived allocations (a tunnel's buffers) the freed middle stays resident. malloc_trim also
 * releases the whole free pages inside the heap and every thread's arena. Returns whether any memory was
 * released; false where the C library has no malloc_trim (not glibc).
 */
#include <node_api.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#if defined(__GLIBC__)
  released = malloc_trim(0);
#endif
  napi_value result;
  napi_get_boolean(env, released != 0, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  return exports;
}
