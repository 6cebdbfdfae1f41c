// posix_spawn for node: starts a job's process without copying the agent's page tables.
//
// node's child_process forks (libuv's uv_spawn): the kernel copies the page tables of the whole agent and marks
// its memory copy-on-write, and the agent then takes a page fault on the first write to each page. That is most
// of an agent's CPU per command (2.2-2.5 ms per spawn of /usr/bin/true, 2026-11-28). glibc's posix_spawn uses
// clone(CLONE_VM | CLONE_VFORK): no copy, no faults (~0.2 ms).
//
// spawn(file, args, env, cwd, onExit) -> [pid, stdoutFd, stderrFd]
//   file is searched in PATH like execvp; args includes argv[0]; env is an array of "NAME=value"; cwd may be null.
//   The child gets /dev/null as stdin, the write ends of two fresh pipes as stdout and stderr, leads a new session
//   (like node's detached: true, so its whole process group can be signalled), has every signal at its default
//   action and an empty signal mask. onExit(code, signal) is called once, on the JS thread, when it has exited:
//   code is the exit status or -1, signal the number of the terminating signal or 0.
//   Throws an Error with `code` (e.g. ENOENT, EACCES) when the program or the cwd cannot be used.
//
// Exit statuses come from one thread per running child that waits for that pid only (libuv waits for its own
// children by pid too, so neither takes the other's).

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    if ((call) != napi_ok) return NULL;                                                                                \
  } while (0)

typedef struct {
  pid_t pid;
  int status;
  napi_threadsafe_function on_exit;
} Waiter;

static void free_strings(char **strings) {
  if (!strings) return;
  for (char **s = strings; *s; s++) free(*s);
  free(strings);
}

static char *string_of(napi_env env, napi_value value) {
  size_t length = 0;
  if (napi_get_value_string_utf8(env, value, NULL, 0, &length) != napi_ok) return NULL;
  char *text = malloc(length + 1);
  if (!text) return NULL;
  if (napi_get_value_string_utf8(env, value, text, length + 1, &length) != napi_ok) {
    free(text);
    return NULL;
  }
  // A NUL inside would silently cut the string short: refuse it instead.
  if (strlen(text) != length) {
    free(text);
    return NULL;
  }
  return text;
}

/** A NULL-terminated copy of a JS array of strings; NULL when it is not one. */
static char **strings_of(napi_env env, napi_value array) {
  uint32_t count = 0;
  if (napi_get_array_length(env, array, &count) != napi_ok) return NULL;
  char **strings = calloc(count + 1, sizeof(char *));
  if (!strings) return NULL;
  for (uint32_t i = 0; i < count; i++) {
    napi_value item;
    if (napi_get_element(env, array, i, &item) != napi_ok || !(strings[i] = string_of(env, item))) {
      free_strings(strings);
      return NULL;
    }
  }
  return strings;
}

static napi_value throw_errno(napi_env env, int err, const char *what) {
  napi_value code, message, error;
  napi_create_string_utf8(env, strerror(err), NAPI_AUTO_LENGTH, &message);
  const char *name = err == ENOENT ? "ENOENT" : err == EACCES ? "EACCES" : err == ENOTDIR ? "ENOTDIR"
                   : err == ENOEXEC ? "ENOEXEC" : err == EMFILE ? "EMFILE" : err == ENFILE ? "ENFILE"
                   : err == EAGAIN ? "EAGAIN" : err == ENOMEM ? "ENOMEM" : err == E2BIG ? "E2BIG" : "EIO";
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_error(env, code, message, &error);
  napi_value syscall;
  napi_create_string_utf8(env, what, NAPI_AUTO_LENGTH, &syscall);
  napi_set_named_property(env, error, "syscall", syscall);
  napi_throw(env, error);
  return NULL;
}

static void call_on_exit(napi_env env, napi_value callback, void *context, void *data) {
  (void)context;
  Waiter *waiter = data;
  if (env && callback) {
    napi_value args[2], global;
    int code = WIFEXITED(waiter->status) ? WEXITSTATUS(waiter->status) : -1;
    int signal = WIFSIGNALED(waiter->status) ? WTERMSIG(waiter->status) : 0;
    napi_create_int32(env, code, &args[0]);
    napi_create_int32(env, signal, &args[1]);
    napi_get_global(env, &global);
    napi_call_function(env, global, callback, 2, args, NULL);
  }
  free(waiter);
}

static void *wait_for_exit(void *data) {
  Waiter *waiter = data;
  napi_threadsafe_function on_exit = waiter->on_exit;
  while (waitpid(waiter->pid, &waiter->status, 0) < 0 && errno == EINTR) {
  }
  napi_call_threadsafe_function(on_exit, waiter, napi_tsfn_blocking);
  napi_release_threadsafe_function(on_exit, napi_tsfn_release);
  return NULL;
}

static int start_waiter(napi_env env, napi_value on_exit, pid_t pid) {
  Waiter *waiter = calloc(1, sizeof(Waiter));
  if (!waiter) return ENOMEM;
  waiter->pid = pid;
  napi_value name;
  napi_create_string_utf8(env, "native-spawn exit", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, on_exit, NULL, name, 0, 1, NULL, NULL, NULL, call_on_exit,
                                      &waiter->on_exit) != napi_ok) {
    free(waiter);
    return EIO;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // The thread only waits: a small stack keeps a thousand running jobs cheap.
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t thread;
  int err = pthread_create(&thread, &attr, wait_for_exit, waiter);
  pthread_attr_destroy(&attr);
  if (err) {
    napi_release_threadsafe_function(waiter->on_exit, napi_tsfn_abort);
    free(waiter);
  }
  return err;
}

static napi_value spawn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  napi_valuetype cwd_type, on_exit_type;
  CHECK(napi_typeof(env, argv[3], &cwd_type));
  CHECK(napi_typeof(env, argv[4], &on_exit_type));
  char *file = argc == 5 ? string_of(env, argv[0]) : NULL;
  char **args = file ? strings_of(env, argv[1]) : NULL;
  char **envp = args ? strings_of(env, argv[2]) : NULL;
  char *cwd = envp && cwd_type == napi_string ? string_of(env, argv[3]) : NULL;
  if (!envp || (cwd_type == napi_string && !cwd) || on_exit_type != napi_function) {
    free(file);
    free_strings(args);
    free_strings(envp);
    free(cwd);
    napi_throw_type_error(env, "EINVAL",
                          "spawn(file, args, env, cwd, onExit): strings without NUL bytes, cwd may be null");
    return NULL;
  }

  int out[2] = {-1, -1}, err[2] = {-1, -1};
  int failure = 0;
  const char *failed_call = "pipe";
  pid_t pid = 0;
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    failure = errno;
  } else {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    if (cwd) posix_spawn_file_actions_addchdir_np(&actions, cwd);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    failure = posix_spawnp(&pid, file, &actions, &attr, args, envp);
    failed_call = "posix_spawn";
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  if (out[1] >= 0) close(out[1]);
  if (err[1] >= 0) close(err[1]);
  free(file);
  free_strings(args);
  free_strings(envp);
  free(cwd);
  if (failure) {
    if (out[0] >= 0) close(out[0]);
    if (err[0] >= 0) close(err[0]);
    return throw_errno(env, failure, failed_call);
  }
  failure = start_waiter(env, argv[4], pid);
  if (failure) {
    // Without a waiter the exit would never be reported: stop the child rather than lose it.
    kill(-pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    close(out[0]);
    close(err[0]);
    return throw_errno(env, failure, "pthread_create");
  }
  napi_value result, value;
  CHECK(napi_create_array_with_length(env, 3, &result));
  CHECK(napi_create_int32(env, pid, &value));
  CHECK(napi_set_element(env, result, 0, value));
  CHECK(napi_create_int32(env, out[0], &value));
  CHECK(napi_set_element(env, result, 1, value));
  CHECK(napi_create_int32(env, err[0], &value));
  CHECK(napi_set_element(env, result, 2, value));
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  CHECK(napi_create_function(env, "spawn", NAPI_AUTO_LENGTH, spawn, NULL, &fn));
  CHECK(napi_set_named_property(env, exports, "spawn", fn));
  return exports;
}
