// berth_page_out.node: hands the pages of the agent's own executable back to the kernel.
//
// The single executable is Node itself (~110 MB). Start-up reads a good part of it, and the
// kernel keeps what it mapped in the process's RSS for the life of the process; with the
// read-ahead around each fault (8 MB on some disks) and large page-cache folios mapped whole,
// that is much more than start-up touched (~40 MB here). The daemon then idles in a small part
// of that code. pageOut() advises every read-only mapping of the executable MADV_PAGEOUT:
// reclaim its pages now. It is advice: the pages are clean copies of the file and come back
// (read as usual) at their next touch, and the kernel skips what it may not reclaim (pages
// other processes map, or a file the caller neither owns nor may write; the installer makes
// the agent's user the executable's owner). It reclaims, it never discards: private pages
// that were written (relocated data) are left alone.
//
// pageOut() returns the bytes of mappings advised, or throws with errno's text.
#include <errno.h>
#include <limits.h>
#include <node_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21 /* Linux 5.4 */
#endif

static napi_value page_out(napi_env env, napi_callback_info info) {
  (void)info;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) {
    napi_throw_error(env, NULL, strerror(errno));
    return NULL;
  }
  exe[n] = '\0';
  FILE *maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) {
    napi_throw_error(env, NULL, strerror(errno));
    return NULL;
  }
  char line[PATH_MAX + 128];
  double advised = 0;
  int failure = 0;
  while (fgets(line, sizeof line, maps) != NULL) {
    unsigned long start, end;
    char perms[5];
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &start, &end, perms, &path_at) < 3 || path_at == 0) continue;
    char *path = line + path_at;
    path[strcspn(path, "\n")] = '\0';
    // Read-only mappings of the executable (code and constants), never writable ones.
    if (strcmp(path, exe) != 0 || perms[0] != 'r' || perms[1] != '-') continue;
    void *addr = (void *)start;
    size_t len = end - start;
    if (madvise(addr, len, MADV_PAGEOUT) != 0) {
      failure = errno;
      continue;
    }
    advised += (double)len;
  }
  fclose(maps);
  if (advised == 0 && failure != 0) {
    napi_throw_error(env, NULL, strerror(failure));
    return NULL;
  }
  napi_value result;
  napi_create_double(env, advised, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "pageOut", NAPI_AUTO_LENGTH, page_out, NULL, &fn);
  napi_set_named_property(env, exports, "pageOut", fn);
  return exports;
}
