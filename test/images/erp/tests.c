/*
 * The stand-in's module tests (odoo.c calls tests_at_install while it loads a module that is
 * installed or upgraded, and tests_report before it stops with --stop-after-init, both only
 * with --test-enable). It runs nothing: it reads a module's tests/ folder and prints what
 * Odoo 16.0-19.0 prints for each test, so Berth's parser reads real Odoo output.
 *
 * Which tests: as odoo/tests/loader.py get_test_modules, the tests/test_*.py files that
 * tests/__init__.py imports (`from . import test_a, test_b`); in each, every `def test_*`
 * method of a `class X(...)`, run in unittest's order (file, class, method by name). Only
 * at_install tests (the default tags, standard and at_install); --test-tags as
 * odoo/tests/tag_selector.py reads it: comma-separated `[-][tag][/module][:class][.method]`.
 *
 * What a test does: it passes, unless its body holds a comment
 *   `# stand-in: fail <exception line>`  (a failure, e.g. `AssertionError: 1 != 2`), or
 *   `# stand-in: error <exception line>` (an error, e.g. `ValueError: boom`);
 * the traceback then names that line, as Python's would.
 *
 * What it prints, each line after the Odoo source it follows:
 *  - odoo/tests/result.py OdooTestResult.startTest: INFO `Starting <Class>.<method> ...`, by
 *    the logger of the test's Python module (odoo.addons.<module>.tests.<file>);
 *  - OdooTestResult.logError: INFO `======...` (70 '='), then ERROR
 *    `FAIL: <Class>.<method>` or `ERROR: <Class>.<method>` followed, in the same record, by
 *    the traceback (traceback.TracebackException.format: unittest's own frames left out);
 *  - odoo/modules/loading.py load_module_graph: ERROR `Module <m>: <F> failures, <E> errors
 *    of <T> tests` by odoo.modules.loading after a module whose tests did not all pass;
 *  - odoo/service/server.py preload_registries: OdooTestResult.log_stats, INFO
 *    `<module>: <T> tests <s>s <q> queries` by odoo.tests.stats; then ThreadedServer.run
 *    (stop): `<F> failed, <E> error(s) of <T> tests when loading database '<db>'` by
 *    odoo.tests.result, ERROR when a test failed, WARNING when none ran, INFO otherwise;
 *    preload_registries adds 1 to the exit code when the report is not successful (rc += 1),
 *    so the server exits 1 after loading every module.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*tests_log_fn)(const char *level, const char *logger, const char *fmt, ...);

#define MAX_TESTS 128
#define MAX_STATS 64

struct test {
  char file[128], cls[128], method[128];
  char kind;        /* 0 pass, 'F' failure, 'E' error */
  char exc[512];    /* the exception line */
  char code[512];   /* the marked source line, stripped */
  int line;
};

static int total_run, total_failed, total_errors;
static struct { char module[128]; int tests; } stats[MAX_STATS];
static int nstats;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *buf = malloc(262145);
  size_t n = buf ? fread(buf, 1, 262144, f) : 0;
  fclose(f);
  if (buf) buf[n] = 0;
  return buf;
}

/* tag_selector.py TagsSelector: one spec `[-][tag][/module][:class][.method]`. */
static int spec_matches(const char *spec, const char *module, const char *cls, const char *method) {
  char tag[128] = "", mod[128] = "", klass[128] = "", meth[128] = "";
  const char *p = spec;
  size_t n = strcspn(p, "/:.");
  snprintf(tag, sizeof tag, "%.*s", (int)n, p);
  p += n;
  if (*p == '/') { n = strcspn(++p, ":."); snprintf(mod, sizeof mod, "%.*s", (int)n, p); p += n; }
  if (*p == ':') { n = strcspn(++p, "."); snprintf(klass, sizeof klass, "%.*s", (int)n, p); p += n; }
  if (*p == '.') snprintf(meth, sizeof meth, "%s", p + 1);
  /* The tests' tags are standard and at_install; '*' matches any. */
  if (*tag && strcmp(tag, "*") != 0 && strcmp(tag, "standard") != 0 && strcmp(tag, "at_install") != 0) return 0;
  if (*mod && strcmp(mod, module) != 0) return 0;
  if (*klass && strcmp(klass, cls) != 0) return 0;
  if (*meth && strcmp(meth, method) != 0) return 0;
  return 1;
}

/* Included when a positive spec matches (none given: standard) and no '-' spec does. */
static int selected(const char *tags, const char *module, const char *cls, const char *method) {
  if (!tags || !*tags) return 1;
  char copy[2048];
  snprintf(copy, sizeof copy, "%s", tags);
  int include = 0, any_positive = 0;
  for (char *save = NULL, *spec = strtok_r(copy, ",", &save); spec; spec = strtok_r(NULL, ",", &save)) {
    while (*spec == ' ') spec++;
    if (*spec == '-') {
      if (spec_matches(spec + 1, module, cls, method)) return 0;
      continue;
    }
    const char *s = *spec == '+' ? spec + 1 : spec;
    any_positive = 1;
    include |= spec_matches(s, module, cls, method);
  }
  return any_positive ? include : 1;
}

static void read_test_file(const char *dir, const char *file, struct test *tests, int *n) {
  char path[900];
  snprintf(path, sizeof path, "%s/tests/%s.py", dir, file);
  char *text = slurp(path);
  if (!text) return;
  char cls[128] = "";
  int lineno = 0;
  struct test *cur = NULL;
  for (char *line = text, *next; line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = 0;
    lineno++;
    char name[128];
    if (sscanf(line, "class %127[A-Za-z0-9_]", name) == 1) {
      snprintf(cls, sizeof cls, "%s", name);
      cur = NULL;
    } else if (sscanf(line, " def %127[A-Za-z0-9_]", name) == 1) {
      cur = NULL;
      if (strncmp(name, "test", 4) == 0 && *cls && *n < MAX_TESTS) {
        cur = &tests[(*n)++];
        memset(cur, 0, sizeof *cur);
        snprintf(cur->file, sizeof cur->file, "%s", file);
        snprintf(cur->cls, sizeof cur->cls, "%s", cls);
        snprintf(cur->method, sizeof cur->method, "%s", name);
      }
    } else if (cur && !cur->kind) {
      const char *mark = strstr(line, "# stand-in: ");
      if (!mark) continue;
      const char *what = mark + strlen("# stand-in: ");
      if (strncmp(what, "fail ", 5) == 0) cur->kind = 'F';
      else if (strncmp(what, "error ", 6) == 0) cur->kind = 'E';
      else continue;
      snprintf(cur->exc, sizeof cur->exc, "%s", what + (cur->kind == 'F' ? 5 : 6));
      const char *code = line;
      while (*code == ' ') code++;
      int len = (int)(mark - code);
      while (len > 0 && code[len - 1] == ' ') len--;
      snprintf(cur->code, sizeof cur->code, "%.*s", len, code);
      cur->line = lineno;
    }
  }
  free(text);
}

static int by_order(const void *a, const void *b) {
  const struct test *x = a, *y = b;
  int c = strcmp(x->file, y->file);
  if (!c) c = strcmp(x->cls, y->cls);
  return c ? c : strcmp(x->method, y->method);
}

void tests_at_install(const char *module, const char *dir, const char *tags, tests_log_fn log_line) {
  char path[900];
  snprintf(path, sizeof path, "%s/tests/__init__.py", dir);
  char *init = slurp(path);
  if (!init) return;
  static struct test tests[MAX_TESTS];
  int n = 0;
  /* `from . import test_a, test_b`: the test modules loader.py finds. */
  for (char *save = NULL, *line = strtok_r(init, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, "from . import ", 14) != 0) continue;
    for (char *s2 = NULL, *name = strtok_r(line + 14, ", ", &s2); name; name = strtok_r(NULL, ", ", &s2))
      if (strncmp(name, "test_", 5) == 0) read_test_file(dir, name, tests, &n);
  }
  free(init);
  qsort(tests, (size_t)n, sizeof tests[0], by_order);
  int run = 0, failed = 0, errors = 0;
  for (int i = 0; i < n; i++) {
    struct test *t = &tests[i];
    if (!selected(tags, module, t->cls, t->method)) continue;
    char logger[400];
    snprintf(logger, sizeof logger, "odoo.addons.%s.tests.%s", module, t->file);
    run++;
    log_line("INFO", logger, "Starting %s.%s ...", t->cls, t->method);
    if (!t->kind) continue;
    if (t->kind == 'F') failed++;
    else errors++;
    log_line("INFO", logger, "======================================================================");
    log_line("ERROR", logger,
             "%s: %s.%s\nTraceback (most recent call last):\n  File \"%s/tests/%s.py\", line %d, in %s\n    %s\n%s\n",
             t->kind == 'F' ? "FAIL" : "ERROR", t->cls, t->method, dir, t->file, t->line, t->method, t->code, t->exc);
  }
  if (run == 0) return;
  if (failed || errors)
    log_line("ERROR", "odoo.modules.loading", "Module %s: %d failures, %d errors of %d tests", module, failed, errors, run);
  total_run += run;
  total_failed += failed;
  total_errors += errors;
  if (nstats < MAX_STATS) {
    snprintf(stats[nstats].module, sizeof stats[nstats].module, "%s", module);
    stats[nstats++].tests = run;
  }
}

int tests_report(const char *db, tests_log_fn log_line) {
  for (int i = 0; i < nstats; i++)
    log_line("INFO", "odoo.tests.stats", "%s: %d tests 0.00s 0 queries", stats[i].module, stats[i].tests);
  int ok = !total_failed && !total_errors;
  log_line(ok ? (total_run ? "INFO" : "WARNING") : "ERROR", "odoo.tests.result",
           "%d failed, %d error(s) of %d tests when loading database '%s'", total_failed, total_errors, total_run, db);
  return ok ? 0 : 1;
}
