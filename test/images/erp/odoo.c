/*
 * Stand-in for the official ERP (Odoo) server, for Berth's Docker tests.
 *
 * It reproduces what Berth relies on and nothing more: the configuration file and
 * environment of the official image, the 30 s wait for PostgreSQL, the database and the
 * file store written on first start, /web/health, and a tiny table (berth_probe) that
 * tests use to prove data survives restarts, redeploys, rollbacks and restores.
 * See ../README.md for the HTTP routes and the hooks tests can use.
 *
 * Strict: it behaves as real Odoo of the series ODOO_VERSION names (16.0-19.0) wherever
 * Berth depends on it, each behaviour naming the Odoo source it follows: the option parser
 * (odoo/tools/config.py), modules as odoo/modules/loading.py loads them (ir_module_module
 * with base, -i/-u, depends and versions from __manifest__.py, --stop-after-init, demo
 * options per series), their log lines and failures, /web/login failing while /web/health
 * passes when the registry cannot load. berth_upgrade.sql / FAIL_UPGRADE / BERTH_FAIL_HEALTH
 * in a module's folder let tests change the database in an upgrade, make it fail after that
 * change, or make the module's Python fail to import.
 *
 * One process per connection (fork): a stuck request can only ever hold its own child,
 * which alarm() ends, so health checks keep being answered. Connections are persistent as
 * in werkzeug: HTTP/1.1 (or HTTP/1.0 asking for keep-alive) gets request after request on
 * one connection, pipelined ones too, until the client closes, asks for close, or is idle
 * for KEEPALIVE_SECONDS; each request has its own REQUEST_SECONDS.
 *
 * Behind a reverse proxy, GET /berth/request tells what reached the server (its local port,
 * Host, X-Forwarded-*), and /websocket (also /websocket/..., /longpolling/...) completes a
 * real WebSocket handshake, sends that same report as a text frame, echoes one text frame
 * and closes: enough for tests to prove a proxy upgrades and routes websockets.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MARKER_SHA1
#error "build with -DMARKER_SHA1=\"<sha1 of MARKER_CONTENT>\" (test/images/build.sh does)"
#endif
#define MARKER_CONTENT "berth stand-in ERP: file store marker\n"
#define STR_(x) #x
#define STR(x) STR_(x)

#define MAX_KV 128
#define MAX_HEADER 16384
#define MAX_BODY 65536
#define MAX_CHILDREN 256     /* connections served at once; each keep-alive one holds a child */
#define LISTEN_BACKLOG 512   /* connections waiting for accept() (the kernel caps it at somaxconn) */
#define REQUEST_SECONDS 20   /* from a request's first byte to its answer (alarm) */
#define FIRST_REQUEST_SECONDS 5 /* a new connection's wait for its first byte */
#define KEEPALIVE_SECONDS 15 /* an open connection's wait for its next request */
#define WS_WAIT_MS 5000       /* how long a websocket waits for the client's frame */
#define WS_MAX_PAYLOAD 65536  /* larger client frames are refused (close 1009) */

struct kv { char *key; char *value; };
static struct kv conf[MAX_KV];
static int nconf;

static const char *config_path;
static char db_name[256];
static char addons_version[256];
static int addons_version_set;
static int server_version_major = 17;
static char server_version[32] = "17.0";
static volatile sig_atomic_t stopping;

/* ---------- logging, in Odoo's format so log tails look familiar ---------- */

static void log_line(const char *level, const char *logger, const char *fmt, ...) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* One write per line so lines of concurrent children never interleave. */
  char line[2300];
  int n = snprintf(line, sizeof line, "%s,%03d %d %s %s %s: %s\n", stamp, (int)(tv.tv_usec / 1000),
                   (int)getpid(), level, db_name[0] ? db_name : "?", logger, msg);
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) { /* nowhere left to report it */ }
}

/* ---------- configuration: odoo.conf, then command line, then environment ---------- */

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
  return s;
}

static void conf_set(const char *key, const char *value) {
  for (int i = 0; i < nconf; i++)
    if (strcmp(conf[i].key, key) == 0) {
      free(conf[i].value);
      conf[i].value = strdup(value);
      return;
    }
  if (nconf < MAX_KV) {
    conf[nconf].key = strdup(key);
    conf[nconf].value = strdup(value);
    nconf++;
  }
}

/* Odoo reads "False"/"None" (and an empty value) in its config file as "not set". */
static const char *conf_get(const char *key) {
  for (int i = 0; i < nconf; i++)
    if (strcmp(conf[i].key, key) == 0) {
      const char *v = conf[i].value;
      if (!*v || strcasecmp(v, "false") == 0 || strcmp(v, "None") == 0) return NULL;
      return v;
    }
  return NULL;
}

static const char *conf_or(const char *key, const char *fallback) {
  const char *v = conf_get(key);
  return v ? v : fallback;
}

static int read_config_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char buf[4096];
  int in_options = 0;
  while (fgets(buf, sizeof buf, f)) {
    char *line = trim(buf);
    if (!*line || *line == ';' || *line == '#') continue;
    if (*line == '[') {
      in_options = strncmp(line, "[options]", 9) == 0;
      continue;
    }
    if (!in_options) continue;
    char *eq = strchr(line, '=');
    if (!eq) eq = strchr(line, ':');
    if (!eq) continue;
    *eq = 0;
    conf_set(trim(line), trim(eq + 1));
  }
  fclose(f);
  return 0;
}

/* ---------- the command line, as Odoo's optparse parser reads it ----------
 *
 * odoo/tools/config.py (16.0-19.0) builds an optparse.OptionParser: an option it does not
 * know ends the process with the usage line and "<prog>: error: no such option: --x" on
 * stderr, exit code 2 (optparse.OptionParser.error); a long option may be abbreviated to any
 * unambiguous prefix (optparse._match_abbrev); an option that takes a value takes the next
 * argument whatever it is (`--without-demo --stop-after-init` sets without_demo to
 * "--stop-after-init"), and fails with "<opt> option requires 1 argument" at the end of the
 * line; a flag given a value fails with "<opt> option does not take a value". The table
 * below holds the long options of 16.0-19.0 config.py (one superset; only the demo options
 * differ per series, as config.py of each branch has them). */
enum opt_kind { OPT_VALUE, OPT_INT, OPT_FLAG, OPT_FALSE_FLAG, OPT_OPTIONAL };
struct opt_def { const char *name; const char *dest; enum opt_kind kind; int min_series, max_series; };
static const struct opt_def OPTS[] = {
    {"config", "config", OPT_VALUE, 16, 19}, {"save", "save", OPT_FLAG, 16, 19},
    {"init", "init", OPT_VALUE, 16, 19}, {"update", "update", OPT_VALUE, 16, 19},
    {"reinit", "reinit", OPT_VALUE, 19, 19},
    /* 16.0-18.0 config.py: --without-demo=<modules or all>, demo data by default. */
    {"without-demo", "without_demo", OPT_VALUE, 16, 18},
    /* 19.0 config.py: --with-demo (store_true, my_default=False) and --without-demo[=BOOL]
     * (type 'without_demo', nargs='?', const=True), both stored in with_demo. */
    {"with-demo", "with_demo", OPT_FLAG, 19, 19}, {"without-demo", "with_demo", OPT_OPTIONAL, 19, 19},
    {"import-partial", "import_partial", OPT_VALUE, 16, 19}, {"pidfile", "pidfile", OPT_VALUE, 16, 19},
    {"addons-path", "addons_path", OPT_VALUE, 16, 19}, {"upgrade-path", "upgrade_path", OPT_VALUE, 16, 19},
    {"pre-upgrade-scripts", "pre_upgrade_scripts", OPT_VALUE, 16, 19},
    {"load", "server_wide_modules", OPT_VALUE, 16, 19}, {"data-dir", "data_dir", OPT_VALUE, 16, 19},
    {"http-interface", "http_interface", OPT_VALUE, 16, 19}, {"http-port", "http_port", OPT_INT, 16, 19},
    {"gevent-port", "gevent_port", OPT_INT, 16, 19}, {"longpolling-port", "longpolling_port", OPT_INT, 16, 16},
    {"no-http", "http_enable", OPT_FALSE_FLAG, 16, 19}, {"proxy-mode", "proxy_mode", OPT_FLAG, 16, 19},
    {"x-sendfile", "x_sendfile", OPT_FLAG, 16, 19}, {"db-filter", "dbfilter", OPT_VALUE, 16, 19},
    {"test-file", "test_file", OPT_VALUE, 16, 19}, {"test-enable", "test_enable", OPT_FLAG, 16, 19},
    {"test-tags", "test_tags", OPT_VALUE, 16, 19}, {"screencasts", "screencasts", OPT_VALUE, 16, 19},
    {"screenshots", "screenshots", OPT_VALUE, 16, 19}, {"logfile", "logfile", OPT_VALUE, 16, 19},
    {"syslog", "syslog", OPT_FLAG, 16, 19}, {"log-handler", "log_handler", OPT_VALUE, 16, 19},
    {"log-web", "log_web", OPT_FLAG, 16, 19}, {"log-sql", "log_sql", OPT_FLAG, 16, 19},
    {"log-db", "log_db", OPT_VALUE, 16, 19}, {"log-db-level", "log_db_level", OPT_VALUE, 16, 19},
    {"log-level", "log_level", OPT_VALUE, 16, 19}, {"email-from", "email_from", OPT_VALUE, 16, 19},
    {"from-filter", "from_filter", OPT_VALUE, 16, 19}, {"smtp", "smtp_server", OPT_VALUE, 16, 19},
    {"smtp-port", "smtp_port", OPT_INT, 16, 19}, {"smtp-ssl", "smtp_ssl", OPT_FLAG, 16, 19},
    {"smtp-user", "smtp_user", OPT_VALUE, 16, 19}, {"smtp-password", "smtp_password", OPT_VALUE, 16, 19},
    {"smtp-ssl-certificate-filename", "smtp_ssl_certificate_filename", OPT_VALUE, 16, 19},
    {"smtp-ssl-private-key-filename", "smtp_ssl_private_key_filename", OPT_VALUE, 16, 19},
    {"database", "db_name", OPT_VALUE, 16, 19}, {"db_user", "db_user", OPT_VALUE, 16, 19},
    {"db_password", "db_password", OPT_VALUE, 16, 19}, {"pg_path", "pg_path", OPT_VALUE, 16, 19},
    {"db_host", "db_host", OPT_VALUE, 16, 19}, {"db_port", "db_port", OPT_INT, 16, 19},
    {"db_sslmode", "db_sslmode", OPT_VALUE, 16, 19}, {"db_maxconn", "db_maxconn", OPT_INT, 16, 19},
    {"db_maxconn_gevent", "db_maxconn_gevent", OPT_INT, 17, 19}, {"db-template", "db_template", OPT_VALUE, 16, 19},
    {"db_replica_host", "db_replica_host", OPT_VALUE, 18, 19}, {"db_replica_port", "db_replica_port", OPT_INT, 18, 19},
    {"load-language", "load_language", OPT_VALUE, 16, 19}, {"language", "language", OPT_VALUE, 16, 19},
    {"i18n-export", "translate_out", OPT_VALUE, 16, 19}, {"i18n-import", "translate_in", OPT_VALUE, 16, 19},
    {"i18n-overwrite", "overwrite_existing_translations", OPT_FLAG, 16, 19},
    {"modules", "translate_modules", OPT_VALUE, 16, 19}, {"no-database-list", "list_db", OPT_FALSE_FLAG, 16, 19},
    {"dev", "dev_mode", OPT_VALUE, 16, 19}, {"shell-interface", "shell_interface", OPT_VALUE, 16, 19},
    {"stop-after-init", "stop_after_init", OPT_FLAG, 16, 19},
    {"osv-memory-count-limit", "osv_memory_count_limit", OPT_INT, 16, 19},
    {"transient-age-limit", "transient_age_limit", OPT_VALUE, 16, 19},
    {"max-cron-threads", "max_cron_threads", OPT_INT, 16, 19},
    {"limit-time-worker-cron", "limit_time_worker_cron", OPT_INT, 18, 19},
    {"unaccent", "unaccent", OPT_FLAG, 16, 19}, {"geoip-city-db", "geoip_city_db", OPT_VALUE, 16, 19},
    {"geoip-country-db", "geoip_country_db", OPT_VALUE, 16, 19}, {"workers", "workers", OPT_INT, 16, 19},
    {"limit-memory-soft", "limit_memory_soft", OPT_INT, 16, 19},
    {"limit-memory-soft-gevent", "limit_memory_soft_gevent", OPT_INT, 18, 19},
    {"limit-memory-hard", "limit_memory_hard", OPT_INT, 16, 19},
    {"limit-memory-hard-gevent", "limit_memory_hard_gevent", OPT_INT, 18, 19},
    {"limit-time-cpu", "limit_time_cpu", OPT_INT, 16, 19}, {"limit-time-real", "limit_time_real", OPT_INT, 16, 19},
    {"limit-time-real-cron", "limit_time_real_cron", OPT_INT, 16, 19},
    {"limit-request", "limit_request", OPT_INT, 16, 19},
    {"help", "help", OPT_FLAG, 16, 19}, {"version", "version", OPT_FLAG, 16, 19},
    /* odoo/cli/neutralize.py adds its "Neutralize" option group to the same parser: --stdout
     * (store_true, dest to_stdout). Known to `odoo neutralize` only (see command_neutralize). */
    {"stdout", "to_stdout", OPT_FLAG, 16, 19},
};
#define NOPTS ((int)(sizeof OPTS / sizeof OPTS[0]))

/* optparse's short options of config.py, and the long option each stands for. */
static const char *short_long(char c) {
  switch (c) {
    case 'c': return "config";
    case 's': return "save";
    case 'i': return "init";
    case 'u': return "update";
    case 'P': return "import-partial";
    case 'D': return "data-dir";
    case 'p': return "http-port";
    case 'd': return "database";
    case 'r': return "db_user";
    case 'w': return "db_password";
    case 'l': return "language";
    case 'h': return "help";
    default: return NULL;
  }
}

static int series_major = 17; /* the series the server behaves as (ODOO_VERSION) */
static int command_neutralize; /* `odoo neutralize`: its options and program name */

/* Whether OPTS[i] exists for this series and command. */
static int opt_available(int i) {
  if (series_major < OPTS[i].min_series || series_major > OPTS[i].max_series) return 0;
  return command_neutralize || strcmp(OPTS[i].dest, "to_stdout") != 0;
}

static const struct opt_def *find_opt(const char *name) {
  for (int i = 0; i < NOPTS; i++)
    if (opt_available(i) && strcmp(OPTS[i].name, name) == 0) return &OPTS[i];
  return NULL;
}

/* The program name optparse prints: sys.argv[0]'s name; from 18.0 each command sets
 * parser.prog to "<name> <command>" (odoo/cli/server.py Server.run, odoo/cli/neutralize.py). */
static const char *prog_name(void) {
  if (series_major < 18) return "odoo";
  return command_neutralize ? "odoo neutralize" : "odoo server";
}

/* optparse.OptionParser.error: the usage, then "<prog>: error: <msg>", exit 2. */
static void optparse_error(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "Usage: %s [options]\n\n%s: error: %s\n", prog_name(), prog_name(), msg);
  exit(2);
}

static int is_int_text(const char *v) {
  const char *p = v;
  while (isspace((unsigned char)*p)) p++;
  if (*p == '+' || *p == '-') p++;
  if (!isdigit((unsigned char)*p)) return 0;
  while (isdigit((unsigned char)*p)) p++;
  while (isspace((unsigned char)*p)) p++;
  return *p == 0;
}

static void add_cli(struct kv *out, int *nout, const char *key, const char *value) {
  if (*nout >= MAX_KV) return;
  out[*nout].key = strdup(key);
  out[*nout].value = strdup(value);
  (*nout)++;
}

/* 19.0 config.py _check_bool: 1/yes/true/on and 0/no/false/off, in any case; -1 otherwise. */
static int python_bool(const char *v) {
  static const char *yes[] = {"1", "yes", "true", "on"}, *no[] = {"0", "no", "false", "off"};
  for (int i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0) return 1;
    if (strcasecmp(v, no[i]) == 0) return 0;
  }
  return -1;
}

/* 19.0 config.py _check_without_demo: with_demo = not BOOL; a value that is not a boolean
 * is only a warning ("since 19.0, invalid boolean value: 'all', assume True") and counts as
 * --without-demo (with_demo = value == 'None'). OPT is how the option was named. */
static const char *without_demo_19(const char *opt, const char *value) {
  int b = python_bool(value);
  if (b >= 0) return b ? "False" : "True";
  log_line("WARNING", "odoo.tools.config", "option %s: since 19.0, invalid boolean value: '%s', assume %s", opt, value,
           strcmp(value, "None") != 0 ? "True" : "False");
  return strcmp(value, "None") == 0 ? "True" : "False";
}

static void print_help(void) {
  printf("Usage: %s [options]\n\nOptions:\n  --version             show program's version number and exit\n"
         "  -h, --help            show this help message and exit\n",
         prog_name());
  for (int i = 0; i < NOPTS; i++)
    if (opt_available(i) && strcmp(OPTS[i].dest, "help") && strcmp(OPTS[i].dest, "version"))
      printf("  --%s%s\n", OPTS[i].name, OPTS[i].kind == OPT_FLAG || OPTS[i].kind == OPT_FALSE_FLAG ? "" :
                                          OPTS[i].kind == OPT_OPTIONAL ? "[=BOOL]" : "=VALUE");
}

/* Command-line options, as Odoo's optparse parser reads them (odoo/tools/config.py). Values
 * are stored raw: in 16.0-18.0 a command-line string is used as given (config.py
 * _parse_config copies getattr(opt, arg)), so `--without-demo=False` is a non-empty string. */
static void parse_args(int argc, char **argv, struct kv *out, int *nout) {
  int positional = 0;
  char leftovers[512] = "";
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const struct opt_def *o = NULL;
    const char *value = NULL, *shown = a;
    char optname[160];
    if (strcmp(a, "--") == 0) {
      for (i++; i < argc; i++) {
        positional++;
        snprintf(leftovers + strlen(leftovers), sizeof leftovers - strlen(leftovers), "%s%s", *leftovers ? " " : "", argv[i]);
      }
      break;
    }
    if (a[0] == '-' && a[1] == '-') {
      const char *eq = strchr(a + 2, '=');
      size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
      char name[128];
      if (len >= sizeof name) len = sizeof name - 1;
      memcpy(name, a + 2, len);
      name[len] = 0;
      snprintf(optname, sizeof optname, "--%s", name);
      o = find_opt(name);
      if (!o) {
        /* optparse._match_abbrev: a unique prefix of a long option stands for it. */
        const struct opt_def *match = NULL;
        char candidates[512] = "";
        int n = 0;
        for (int k = 0; k < NOPTS; k++) {
          if (!opt_available(k)) continue;
          if (strncmp(OPTS[k].name, name, len) != 0) continue;
          /* 19.0 has two options named without-demo/with-demo: count names, not entries. */
          int dup = 0;
          for (int j = 0; j < k; j++)
            dup |= strcmp(OPTS[j].name, OPTS[k].name) == 0 && series_major >= OPTS[j].min_series &&
                   series_major <= OPTS[j].max_series;
          if (dup) continue;
          snprintf(candidates + strlen(candidates), sizeof candidates - strlen(candidates), "%s--%s", n ? ", " : "",
                   OPTS[k].name);
          match = &OPTS[k];
          n++;
        }
        if (n == 0 || !*name) optparse_error("no such option: %s", optname);
        if (n > 1) optparse_error("ambiguous option: %s (%s?)", optname, candidates);
        o = match;
        snprintf(optname, sizeof optname, "--%s", o->name);
      }
      shown = optname;
      if (eq) value = eq + 1;
    } else if (a[0] == '-' && a[1]) {
      const char *lng = short_long(a[1]);
      snprintf(optname, sizeof optname, "-%c", a[1]);
      if (!lng || !(o = find_opt(lng))) optparse_error("no such option: -%c", a[1]);
      shown = optname;
      if (a[2]) {
        if (o->kind == OPT_FLAG || o->kind == OPT_FALSE_FLAG)
          optparse_error("no such option: -%c", a[2]); /* -sx: optparse reads x as the next short option */
        value = a + 2;
      }
    } else {
      positional++;
      snprintf(leftovers + strlen(leftovers), sizeof leftovers - strlen(leftovers), "%s%s", *leftovers ? " " : "", a);
      continue;
    }
    if (o->kind == OPT_FLAG || o->kind == OPT_FALSE_FLAG) {
      if (value) optparse_error("%s option does not take a value", shown);
      if (strcmp(o->dest, "help") == 0) {
        print_help();
        exit(0);
      }
      if (strcmp(o->dest, "version") == 0) {
        /* config.py: optparse.OptionParser(version="%s %s" % (release.description, release.version)). */
        printf("Odoo Server %s\n", server_version);
        exit(0);
      }
      add_cli(out, nout, o->dest, o->kind == OPT_FLAG ? "True" : "False");
      continue;
    }
    if (o->kind == OPT_OPTIONAL) {
      /* 19.0 config.py _parse_config: a nargs='?' option last or followed by an option gets
       * its const ("--without-demo" -> "--without-demo=True"). */
      if (!value && (i + 1 == argc || argv[i + 1][0] == '-')) value = "True";
      else if (!value) value = argv[++i];
      add_cli(out, nout, o->dest, without_demo_19(shown, value));
      continue;
    }
    if (!value) {
      if (i + 1 >= argc) optparse_error("%s option requires 1 argument", shown);
      value = argv[++i];
    }
    if (o->kind == OPT_INT && !is_int_text(value))
      optparse_error("option %s: invalid integer value: '%s'", shown, value);
    add_cli(out, nout, o->dest, value);
  }
  /* 19.0 config.py: "unrecognized parameters" for what optparse left over; 16.0-18.0 ignore it. */
  if (positional && series_major >= 19) optparse_error("unrecognized parameters: %s", leftovers);
}

static char *env_or(const char *a, const char *b, const char *fallback) {
  const char *v = getenv(a);
  if (v && *v) return strdup(v);
  if (b) {
    v = getenv(b);
    if (v && *v) return strdup(v);
  }
  return fallback ? strdup(fallback) : NULL;
}

static char *read_small_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char buf[256];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return strdup(trim(buf));
}

/* Mirrors the official entrypoint: a key in odoo.conf wins, else HOST/PORT/USER/PASSWORD
 * (then PG*), else db/5432/odoo/odoo. */
static void apply_db_env_fallbacks(void) {
  if (!conf_get("db_host")) conf_set("db_host", env_or("HOST", "PGHOST", "db"));
  if (!conf_get("db_port")) conf_set("db_port", env_or("PORT", "PGPORT", "5432"));
  if (!conf_get("db_user")) conf_set("db_user", env_or("USER", "PGUSER", "odoo"));
  if (!conf_get("db_password")) {
    char *pw = NULL;
    const char *pwfile = getenv("PASSWORD_FILE");
    if (pwfile && *pwfile) pw = read_small_file(pwfile);
    if (!pw) pw = env_or("PASSWORD", "PGPASSWORD", "odoo");
    conf_set("db_password", pw);
  }
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Looks for a file in each addons_path entry, then in /mnt/extra-addons. */
static int find_in_addons(const char *file, char *found, size_t size) {
  char paths[2048];
  snprintf(paths, sizeof paths, "%s,/mnt/extra-addons", conf_or("addons_path", ""));
  char *save = NULL;
  for (char *p = strtok_r(paths, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
    p = trim(p);
    if (!*p) continue;
    snprintf(found, size, "%s/%s", p, file);
    if (file_exists(found)) return 1;
  }
  return 0;
}

/* ---------- database ---------- */

/* libpq's messages span lines; a log line must not. */
static const char *one_line(char *s) {
  for (char *p = s; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
  return trim(s);
}

static char last_db_error[512];

static void ignore_notice(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

static PGconn *db_connect(const char *dbname, int timeout_seconds) {
  char timeout[16];
  snprintf(timeout, sizeof timeout, "%d", timeout_seconds);
  const char *keys[] = {"host", "port", "user", "password", "dbname", "connect_timeout",
                        "application_name", "sslmode", "options", NULL};
  const char *values[] = {conf_get("db_host"), conf_get("db_port"), conf_get("db_user"),
                          conf_get("db_password"), dbname, timeout, "odoo-berth-standin",
                          conf_or("db_sslmode", "prefer"), "-c statement_timeout=10000", NULL};
  PGconn *c = PQconnectdbParams(keys, values, 0);
  /* psycopg2 keeps PostgreSQL's notices in connection.notices: Odoo prints none of them. */
  PQsetNoticeProcessor(c, ignore_notice, NULL);
  if (PQstatus(c) != CONNECTION_OK) {
    snprintf(last_db_error, sizeof last_db_error, "%s", PQerrorMessage(c));
    one_line(last_db_error);
    PQfinish(c);
    return NULL;
  }
  return c;
}

static int exec_ok(PGconn *c, const char *sql) {
  PGresult *r = PQexec(c, sql);
  ExecStatusType s = PQresultStatus(r);
  int ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
  if (!ok) log_line("ERROR", "odoo.sql_db", "%s: %s", sql, one_line(PQresultErrorMessage(r)));
  PQclear(r);
  return ok;
}

static int wait_for_postgres(int seconds) {
  time_t deadline = time(NULL) + seconds;
  int attempts = 0;
  while (!stopping) {
    PGconn *c = db_connect("postgres", 3);
    if (c) {
      PQfinish(c);
      return 0;
    }
    if (attempts++ == 0) log_line("INFO", "odoo.sql_db", "waiting for PostgreSQL: %s", last_db_error);
    if (time(NULL) >= deadline) {
      log_line("ERROR", "odoo.sql_db", "Database connection failure: %s", last_db_error);
      return -1;
    }
    sleep(1);
  }
  return -1;
}

/* odoo/cli/server.py main: for each database of db_name, odoo.service.db._create_empty_database
 * (a database that exists raises DatabaseExists and is left as it is); a new one gets
 * config['init']['base'] = True. Nothing is logged for it (exp_create_database's "Create
 * database" line is the database manager's, not the command line's). _create_empty_database
 * (odoo/service/db.py; read in a 16.0/17.0 version, db_name still a string): CREATE DATABASE
 * ... ENCODING 'unicode' LC_COLLATE 'C' TEMPLATE template0 (LC_COLLATE only with template0,
 * db_template's default), then in it CREATE EXTENSION IF NOT EXISTS pg_trgm (a failure is a
 * WARNING "Unable to create PostgreSQL extensions : %s") and GRANT CREATE ON SCHEMA PUBLIC TO
 * PUBLIC ("Unable to make public schema public-accessible: %s"). */
static int ensure_database(int *created) {
  PGconn *c = db_connect("postgres", 5);
  if (!c) {
    log_line("ERROR", "odoo.sql_db", "%s", last_db_error);
    return -1;
  }
  const char *params[] = {db_name};
  PGresult *r = PQexecParams(c, "SELECT 1 FROM pg_database WHERE datname = $1", 1, NULL, params, NULL, NULL, 0);
  int exists = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0;
  PQclear(r);
  int ok = 1;
  if (!exists) {
    const char *template = conf_or("db_template", "template0");
    char *ident = PQescapeIdentifier(c, db_name, strlen(db_name));
    char *tmpl = PQescapeIdentifier(c, template, strlen(template));
    char sql[800];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s ENCODING 'unicode' %s TEMPLATE %s", ident,
             strcmp(template, "template0") == 0 ? "LC_COLLATE 'C'" : "", tmpl);
    PQfreemem(ident);
    PQfreemem(tmpl);
    ok = exec_ok(c, sql);
    *created = ok;
  }
  PQfinish(c);
  if (ok && !exists) {
    PGconn *n = db_connect(db_name, 5);
    if (n) {
      PGresult *e = PQexec(n, "CREATE EXTENSION IF NOT EXISTS pg_trgm");
      if (PQresultStatus(e) != PGRES_COMMAND_OK)
        log_line("WARNING", "odoo.service.db", "Unable to create PostgreSQL extensions : %s",
                 one_line(PQresultErrorMessage(e)));
      PQclear(e);
      e = PQexec(n, "GRANT CREATE ON SCHEMA PUBLIC TO PUBLIC");
      if (PQresultStatus(e) != PGRES_COMMAND_OK)
        log_line("WARNING", "odoo.service.db", "Unable to make public schema public-accessible: %s",
                 one_line(PQresultErrorMessage(e)));
      PQclear(e);
      PQfinish(n);
    }
  }
  return ok ? 0 : -1;
}

/* ---------- modules (ir_module_module), as odoo/modules/loading.py does it ---------- */

/* The image's standard add-ons (base, web, mail, ...), where the official images' Debian
 * package installs them (odoo/docker Dockerfiles install the odoo .deb: python3-odoo puts
 * every standard module, base included, in dist-packages/odoo/addons). */
#define STANDARD_ADDONS "/usr/lib/python3/dist-packages/odoo/addons"

/* The add-ons folders, in the order Odoo looks a module up (odoo.addons.__path__, as
 * odoo/addons/__init__.py and odoo/modules/module.py initialize_sys_path build it): the
 * package's own folder, STANDARD_ADDONS, first, then each addons_path entry, then
 * /mnt/extra-addons (as the hooks). So a folder named like a standard module in the add-ons
 * path does not replace it, as in Odoo. */
#define MAX_ADDONS_DIRS 16
static int addons_dirs(char dirs[][512], int max) {
  char paths[2048];
  snprintf(paths, sizeof paths, "%s,%s,/mnt/extra-addons", STANDARD_ADDONS, conf_or("addons_path", ""));
  int n = 0;
  char *save = NULL;
  for (char *p = strtok_r(paths, ",", &save); p && n < max; p = strtok_r(NULL, ",", &save)) {
    p = trim(p);
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/') p[--len] = 0;
    if (!*p) continue;
    int dup = 0;
    for (int i = 0; i < n; i++) dup |= strcmp(dirs[i], p) == 0;
    if (!dup) snprintf(dirs[n++], 512, "%s", p);
  }
  return n;
}

static char *read_text_file(const char *path, size_t max) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *text = malloc(max + 1);
  if (!text) _exit(70);
  size_t n = fread(text, 1, max, f);
  fclose(f);
  text[n] = 0;
  return text;
}

/* A module name as Odoo accepts one (a Python identifier, in practice lower case). */
static int module_name_ok(const char *name) {
  if (!*name || strlen(name) > 120 || isdigit((unsigned char)*name)) return 0;
  for (const char *p = name; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') return 0;
  return 1;
}

/* The folder of module NAME: the first add-ons folder holding NAME/__manifest__.py. */
static int find_module(const char *name, char *dir, size_t size) {
  char dirs[MAX_ADDONS_DIRS][512], manifest[1200];
  int n = addons_dirs(dirs, MAX_ADDONS_DIRS);
  if (!module_name_ok(name)) return 0;
  for (int i = 0; i < n; i++) {
    snprintf(manifest, sizeof manifest, "%s/%s/__manifest__.py", dirs[i], name);
    if (file_exists(manifest)) {
      snprintf(dir, size, "%s/%s", dirs[i], name);
      return 1;
    }
  }
  return 0;
}

/* Where KEY ('key' or "key") is followed by ':' in a manifest: the text after the colon. */
static const char *manifest_value(const char *text, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = text; (p = strstr(p, key)) != NULL; p += kl) {
    if (p == text || (p[-1] != '\'' && p[-1] != '"') || p[kl] != p[-1]) continue;
    const char *v = p + kl + 1;
    while (isspace((unsigned char)*v)) v++;
    if (*v++ != ':') continue;
    while (isspace((unsigned char)*v)) v++;
    return v;
  }
  return NULL;
}

/* The string value of KEY in a manifest ('key': 'value' or "key": "value"): enough Python. */
static int manifest_string(const char *text, const char *key, char *out, size_t size) {
  const char *v = manifest_value(text, key);
  if (!v || (*v != '\'' && *v != '"')) return 0;
  const char *end = strchr(v + 1, *v);
  if (!end) return 0;
  size_t n = (size_t)(end - v - 1);
  if (n >= size) n = size - 1;
  memcpy(out, v + 1, n);
  out[n] = 0;
  return 1;
}

/* 'installable': False in a manifest. */
static int manifest_not_installable(const char *text) {
  const char *v = manifest_value(text, "installable");
  return v && strncmp(v, "False", 5) == 0;
}

#define MAX_DEPS 24
/* 'depends': ['base', 'x'] (a Python list or tuple of string literals), as
 * odoo/modules/module.py load_manifest reads it (ast.literal_eval of the dict). */
static int manifest_depends(const char *text, char deps[][128], int max) {
  const char *v = manifest_value(text, "depends");
  if (!v || (*v != '[' && *v != '(')) return 0;
  char close = *v == '[' ? ']' : ')';
  int n = 0;
  for (const char *p = v + 1; *p && *p != close;) {
    if (*p == '\'' || *p == '"') {
      const char *end = strchr(p + 1, *p);
      if (!end) break;
      size_t len = (size_t)(end - p - 1);
      if (n < max && len < 128) {
        memcpy(deps[n], p + 1, len);
        deps[n][len] = 0;
        n++;
      }
      p = end + 1;
    } else if (*p == '#') {
      while (*p && *p != '\n') p++;
    } else {
      p++;
    }
  }
  return n;
}

/* The server's series, "17.0" (Odoo's release.major_version). */
static void server_series(char *out, size_t size) {
  snprintf(out, size, "%s", server_version);
  char *dot = strchr(out, '.');
  if (dot) dot[strcspn(dot + 1, ".-+~") + 1] = 0;
}

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int all_digits(const char *s, size_t n) {
  if (!n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isdigit((unsigned char)s[i])) return 0;
  return 1;
}

/* odoo/modules/module.py adapt_version (and check_version, 18.0+), per series. Returns 0 and
 * the adapted version; -1 with ERR (ValueError's text) when the version is invalid. Sets
 * *INCOMPATIBLE when check_version refuses it (load_manifest then sets installable=False).
 *  - 16.0 / 17.0: prefix "<series>." unless the version starts with "<series>."; a version
 *    equal to the series is prefixed too ("17.0" -> "17.0.17.0"). No validation.
 *  - 18.0: 2 to 5 dot-separated parts, the last three (at most) integers; prefix unless the
 *    version starts with the series (no dot: "18.0" stays "18.0", then check_version, which
 *    wants "<series>.", makes the module not installable).
 *  - 19.0: 2 to 5 parts, every part an integer; prefix when at most 3 parts and the version
 *    does not start with the series (a 4- or 5-part version stays as written, then
 *    check_version makes it not installable unless it starts with "<series>."). */
static int adapt_version(const char *v, char *out, size_t size, char *err, size_t errsize, int *incompatible) {
  char serie[32], serie_dot[40];
  server_series(serie, sizeof serie);
  snprintf(serie_dot, sizeof serie_dot, "%s.", serie);
  *incompatible = 0;
  if (series_major <= 17) {
    if (strcmp(v, serie) == 0 || !starts_with(v, serie_dot)) snprintf(out, size, "%s.%s", serie, v);
    else snprintf(out, size, "%s", v);
    return 0;
  }
  const char *parts[8];
  size_t lens[8];
  int n = 0;
  for (const char *p = v;; n++) {
    size_t len = strcspn(p, ".");
    if (n < 8) {
      parts[n] = p;
      lens[n] = len;
    }
    if (!p[len]) {
      n++;
      break;
    }
    p += len + 1;
  }
  if (n < 2 || n > 5) {
    snprintf(err, errsize, "Invalid version '%s', must have between 2 and 5 parts", v);
    return -1;
  }
  int first = series_major == 18 && n > 3 ? n - 3 : 0; /* 18.0 parses version_str_parts[-3:] */
  for (int i = first; i < n; i++)
    if (!all_digits(parts[i], lens[i])) {
      snprintf(err, errsize, "Invalid version '%s'", v);
      return -1;
    }
  int prefix = series_major == 18 ? !starts_with(v, serie) : n <= 3 && !starts_with(v, serie);
  if (prefix) snprintf(out, size, "%s.%s", serie, v);
  else snprintf(out, size, "%s", v);
  *incompatible = !starts_with(out, serie_dot);
  return 0;
}

/* Whether NAME is one of the comma-separated LIST. */
static int in_list(const char *list, const char *name) {
  if (!list) return 0;
  size_t nl = strlen(name);
  for (const char *p = list; *p;) {
    while (*p == ',' || isspace((unsigned char)*p)) p++;
    size_t n = strcspn(p, ",");
    size_t m = n;
    while (m && isspace((unsigned char)p[m - 1])) m--;
    if (m && m == nl && strncmp(p, name, nl) == 0) return 1;
    p += n;
  }
  return 0;
}

static void log_raw(const char *text) {
  if (write(STDERR_FILENO, text, strlen(text)) < 0) { /* nowhere left to report it */ }
}

/* Runs SQL on C; on failure puts the error (one line) in ERR, its SQLSTATE in STATE. */
static int exec_err(PGconn *c, const char *sql, char *err, size_t size, char *state) {
  PGresult *r = PQexec(c, sql);
  ExecStatusType s = PQresultStatus(r);
  int ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK || s == PGRES_EMPTY_QUERY;
  if (!ok) {
    const char *primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    snprintf(err, size, "%s", primary ? primary : PQresultErrorMessage(r));
    one_line(err);
    const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (state) snprintf(state, 6, "%s", code ? code : "");
  }
  PQclear(r);
  return ok;
}

static int exec_params(PGconn *c, const char *sql, int n, const char *const *params) {
  PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
  ExecStatusType s = PQresultStatus(r);
  int ok = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
  if (!ok) log_line("ERROR", "odoo.sql_db", "%s: %s", sql, one_line(PQresultErrorMessage(r)));
  PQclear(r);
  return ok;
}

/* The mail server Odoo sends FROM's mail through (mail.c), as
 * odoo/addons/base/models/ir_mail_server.py IrMailServer._find_mail_server picks it among the
 * active records by sequence: one whose from_filter is the address, then its domain, then the
 * first without from_filter, then the first of all (step 4: even one set for another domain).
 * Only with no active record does Odoo use odoo.conf's smtp settings (step 5): returns 0 then.
 * Fills host, port, user and password (smtp_pass) of the record; a database without the
 * table (base not installed) has none. */
int mail_server_record(const char *from, char *host, size_t hs, char *port, size_t ps, char *user, size_t us, char *pass, size_t pws) {
  PGconn *c = db_connect(db_name, 5);
  if (!c) return 0;
  const char *addr = strrchr(from, '<') ? strrchr(from, '<') + 1 : from;
  char email[256];
  snprintf(email, sizeof email, "%s", addr);
  char *gt = strchr(email, '>');
  if (gt) *gt = 0;
  const char *params[] = {email};
  PGresult *r = PQexecParams(c,
                             "SELECT smtp_host, smtp_port::text, coalesce(smtp_user, ''), coalesce(smtp_pass, '') FROM ir_mail_server "
                             "WHERE active ORDER BY "
                             "lower(coalesce(from_filter, '')) = lower($1) DESC, "
                             "lower(coalesce(from_filter, '')) = lower(split_part($1, '@', 2)) DESC, "
                             "coalesce(from_filter, '') = '' DESC, sequence, id LIMIT 1",
                             1, NULL, params, NULL, NULL, 0);
  int found = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
  if (found) {
    snprintf(host, hs, "%s", PQgetvalue(r, 0, 0));
    snprintf(port, ps, "%s", PQgetvalue(r, 0, 1));
    snprintf(user, us, "%s", PQgetvalue(r, 0, 2));
    snprintf(pass, pws, "%s", PQgetvalue(r, 0, 3));
  }
  PQclear(r);
  PQfinish(c);
  return found;
}

/* psycopg2.errors class of an SQLSTATE (the last line of a traceback names it). */
static const char *psycopg2_class(const char *state) {
  static const struct { const char *code, *name; } map[] = {
      {"42703", "UndefinedColumn"}, {"42P01", "UndefinedTable"}, {"42601", "SyntaxError"},
      {"42883", "UndefinedFunction"}, {"42P07", "DuplicateTable"}, {"42701", "DuplicateColumn"},
      {"23505", "UniqueViolation"}, {"23502", "NotNullViolation"}, {"23503", "ForeignKeyViolation"},
      {"57014", "QueryCanceled"}, {"22P02", "InvalidTextRepresentation"}, {"22012", "DivisionByZero"},
      {"P0001", "RaiseException"}, {"40P01", "DeadlockDetected"}, {"55P03", "LockNotAvailable"},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(map[i].code, state) == 0) return map[i].name;
  return NULL;
}

/* The traceback Odoo logs after "Failed to initialize database" (odoo/service/server.py
 * preload_registries, exc_info=True): the frames down to where the module failed, then
 * "<exception class>: <message>". */
static char module_traceback[4000];

static void set_traceback(const char *where, const char *exc_line) {
  char registry[64];
  /* 19.0 moved the registry to odoo/orm/registry.py. */
  snprintf(registry, sizeof registry, "%s", series_major >= 19 ? "orm/registry.py" : "modules/registry.py");
  snprintf(module_traceback, sizeof module_traceback,
           "Traceback (most recent call last):\n"
           "  File \"/usr/lib/python3/dist-packages/odoo/service/server.py\", line 1301, in preload_registries\n"
           "    registry = Registry.new(dbname, update_module=update_module)\n"
           "  File \"/usr/lib/python3/dist-packages/odoo/%s\", line 129, in new\n"
           "    odoo.modules.load_modules(registry, update_module=update_module)\n"
           "  File \"/usr/lib/python3/dist-packages/odoo/modules/loading.py\", line 480, in load_modules\n"
           "    processed_modules += load_marked_modules(env, graph,\n"
           "  File \"/usr/lib/python3/dist-packages/odoo/modules/loading.py\", line 364, in load_marked_modules\n"
           "    loaded, processed = load_module_graph(\n"
           "%s"
           "%s\n",
           registry, where, exc_line);
}

/* A module: its row and what its manifest says. */
struct mod {
  char id[16], name[128], state[32], latest[96], dir[600];
  int demo, known;        /* known: has a folder with a manifest */
  int installable;        /* manifest installable and version compatible */
  int invalid;            /* adapt_version raised (installable manifest): "invalid manifest" */
  char version[96];       /* adapted manifest version */
  char invalid_msg[200];
  char deps[MAX_DEPS][128];
  int ndeps, depth, in_graph;
  char author[128], license[64];
};

#define MAX_MODS 256
static struct mod mods[MAX_MODS];
static int nmods;

static struct mod *mod_by_name(const char *name) {
  for (int i = 0; i < nmods; i++)
    if (strcmp(mods[i].name, name) == 0) return &mods[i];
  return NULL;
}

/* odoo/modules/module.py load_manifest: version (default 1.0, adapted), depends (base when
 * none is given), installable, author, license. base is the server's own module. */
static void read_manifest(struct mod *m) {
  m->known = 0;
  m->installable = 0;
  m->invalid = 0;
  m->ndeps = 0;
  char raw[96] = "1.0";
  if (strcmp(m->name, "base") == 0) {
    m->known = m->installable = 1;
    snprintf(raw, sizeof raw, "1.3");
    snprintf(m->author, sizeof m->author, "Odoo S.A.");
    snprintf(m->license, sizeof m->license, "LGPL-3");
    /* base's folder in the standard add-ons: its berth_upgrade.sql creates base's tables. */
    char manifest[700];
    snprintf(manifest, sizeof manifest, "%s/base/__manifest__.py", STANDARD_ADDONS);
    if (file_exists(manifest)) snprintf(m->dir, sizeof m->dir, "%s/base", STANDARD_ADDONS);
  } else {
    if (!find_module(m->name, m->dir, sizeof m->dir)) return;
    char path[700];
    snprintf(path, sizeof path, "%s/__manifest__.py", m->dir);
    char *text = read_text_file(path, 65536);
    if (!text) return;
    m->known = 1;
    manifest_string(text, "version", raw, sizeof raw);
    snprintf(m->license, sizeof m->license, "LGPL-3");
    manifest_string(text, "author", m->author, sizeof m->author);
    manifest_string(text, "license", m->license, sizeof m->license);
    m->installable = !manifest_not_installable(text);
    m->ndeps = manifest_depends(text, m->deps, MAX_DEPS);
    if (!m->ndeps && !manifest_value(text, "depends")) {
      snprintf(m->deps[0], sizeof m->deps[0], "base");
      m->ndeps = 1;
    }
    free(text);
  }
  int incompatible = 0;
  char err[160];
  if (adapt_version(raw, m->version, sizeof m->version, err, sizeof err, &incompatible) != 0) {
    /* load_manifest: ValueError(f"Module {module}: invalid manifest") from e, when installable. */
    if (m->installable) {
      m->invalid = 1;
      snprintf(m->invalid_msg, sizeof m->invalid_msg, "%s", err);
    }
    m->installable = 0;
    snprintf(m->version, sizeof m->version, "%s", raw);
  } else if (m->installable && incompatible) {
    /* 18.0+ load_manifest: check_version refused it. */
    log_line("WARNING", "odoo.modules.module", "The module %s has an incompatible version, setting installable=False",
             m->name);
    m->installable = 0;
  }
}

/* Reads ir_module_module into mods[], with each row's manifest. */
static int read_modules(PGconn *c) {
  PGresult *r = PQexec(c, "SELECT id, name, state, coalesce(latest_version, ''), coalesce(demo, false) "
                          "FROM ir_module_module ORDER BY id");
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    PQclear(r);
    return -1;
  }
  nmods = 0;
  for (int i = 0; i < PQntuples(r) && nmods < MAX_MODS; i++) {
    struct mod *m = &mods[nmods++];
    memset(m, 0, sizeof *m);
    snprintf(m->id, sizeof m->id, "%s", PQgetvalue(r, i, 0));
    snprintf(m->name, sizeof m->name, "%s", PQgetvalue(r, i, 1));
    snprintf(m->state, sizeof m->state, "%s", PQgetvalue(r, i, 2));
    snprintf(m->latest, sizeof m->latest, "%s", PQgetvalue(r, i, 3));
    m->demo = strcmp(PQgetvalue(r, i, 4), "t") == 0;
    read_manifest(m);
  }
  PQclear(r);
  return 0;
}

static int set_state(PGconn *c, struct mod *m, const char *state) {
  const char *params[] = {m->id, state};
  snprintf(m->state, sizeof m->state, "%s", state);
  return exec_params(c, "UPDATE ir_module_module SET state = $2 WHERE id = $1", 2, params);
}

/* Why loading stopped: the exception Odoo's traceback ends with. */
struct failure { char where[1200]; char exc[1200]; };

/* The module's Python import (odoo/modules/module.py load_openerp_module): fails when the
 * module folder holds BERTH_FAIL_HEALTH (base: when an add-ons folder itself holds it), as a
 * module whose code raises on import. Logs as Odoo does: CRITICAL "Couldn't load module x",
 * then CRITICAL with the exception's text. */
static int import_module(const struct mod *m, struct failure *f) {
  char hook[1200];
  int broken;
  if (strcmp(m->name, "base") == 0) broken = find_in_addons("BERTH_FAIL_HEALTH", hook, sizeof hook);
  else {
    snprintf(hook, sizeof hook, "%s/BERTH_FAIL_HEALTH", m->dir);
    broken = file_exists(hook);
  }
  if (!broken) return 0;
  char msg[1400];
  snprintf(msg, sizeof msg, "berth stand-in: %s makes module %s fail to import", hook, m->name);
  log_line("CRITICAL", "odoo.modules.module", "Couldn't load module %s", m->name);
  log_line("CRITICAL", "odoo.modules.module", "%s", msg);
  if (f) {
    snprintf(f->where, sizeof f->where,
             "  File \"/usr/lib/python3/dist-packages/odoo/modules/loading.py\", line 185, in load_module_graph\n"
             "    load_openerp_module(package.name)\n"
             "  File \"/usr/lib/python3/dist-packages/odoo/modules/module.py\", line 471, in load_openerp_module\n"
             "    __import__(qualname)\n"
             "  File \"%s/__init__.py\", line 1, in <module>\n",
             strcmp(m->name, "base") == 0 ? "/usr/lib/python3/dist-packages/odoo/addons/base" : m->dir);
    snprintf(f->exc, sizeof f->exc, "ImportError: %s", msg);
  }
  return -1;
}

/* A module marked 'to install' or 'to upgrade', loaded as load_module_graph does: its data
 * (berth_upgrade.sql, logged "loading <module>/<file>" as Odoo logs each data file), then
 * state installed and latest_version = the manifest's, then cr.commit() before the next
 * module. FAIL_UPGRADE in its folder makes it raise after its SQL was committed. */
static int update_module_data(PGconn *c, struct mod *m, int want_demo, int base_demo, struct failure *f) {
  int is_base = strcmp(m->name, "base") == 0;
  int install = strcmp(m->state, "to install") == 0;
  /* load_demo / package.should_have_demo: asked for, and every dependency has demo data. */
  int demo = m->demo;
  if (install) demo = want_demo && (is_base || base_demo);
  char err[1024] = "", state[8] = "", path[800];
  if (!exec_err(c, "BEGIN", err, sizeof err, state)) goto sql_failed;
  if (m->dir[0]) {
    snprintf(path, sizeof path, "%s/berth_upgrade.sql", m->dir);
    char *sql = read_text_file(path, 1 << 20);
    if (sql) {
      log_line("INFO", "odoo.modules.loading", "loading %s/berth_upgrade.sql", m->name);
      int ok = exec_err(c, sql, err, sizeof err, state);
      free(sql);
      if (!ok) {
        char ignored[256];
        exec_err(c, "ROLLBACK", ignored, sizeof ignored, NULL);
        goto sql_failed;
      }
    }
    snprintf(path, sizeof path, "%s/FAIL_UPGRADE", m->dir);
    if (file_exists(path)) {
      /* Halfway: what the module changed so far stays committed, then it raises. */
      if (!exec_err(c, "COMMIT", err, sizeof err, state)) goto sql_failed;
      snprintf(f->where, sizeof f->where,
               "  File \"/usr/lib/python3/dist-packages/odoo/modules/loading.py\", line 237, in load_module_graph\n"
               "    migrations.migrate_module(package, 'post')\n"
               "  File \"%s/migrations/%s/post-migrate.py\", line 1, in migrate\n",
               m->dir, m->version);
      snprintf(f->exc, sizeof f->exc, "Exception: berth stand-in: %s makes module %s fail after its changes were committed",
               path, m->name);
      return -1;
    }
  }
  if (install && demo && !is_base) {
    char note[300];
    snprintf(note, sizeof note, "demo data of %s", m->name);
    const char *params[] = {note};
    if (!exec_params(c, "INSERT INTO public.berth_probe (note) VALUES ($1)", 1, params)) {
      snprintf(err, sizeof err, "could not insert the demo row");
      goto sql_failed;
    }
  }
  {
    const char *params[] = {m->id, m->version, demo ? "true" : "false", m->author[0] ? m->author : NULL, m->license};
    if (!exec_params(c,
                     "UPDATE ir_module_module SET state = 'installed', latest_version = $2, demo = $3, "
                     "author = coalesce($4, author), license = $5, write_date = now() WHERE id = $1",
                     5, params)) {
      snprintf(err, sizeof err, "could not record the module");
      goto sql_failed;
    }
  }
  if (!exec_err(c, "COMMIT", err, sizeof err, state)) goto sql_failed;
  snprintf(m->state, sizeof m->state, "installed");
  snprintf(m->latest, sizeof m->latest, "%s", m->version);
  m->demo = demo;
  return 0;
sql_failed:
  snprintf(f->where, sizeof f->where,
           "  File \"/usr/lib/python3/dist-packages/odoo/modules/loading.py\", line 230, in load_module_graph\n"
           "    load_data(env, idref, mode, kind='data', package=package)\n"
           "  File \"/usr/lib/python3/dist-packages/odoo/modules/loading.py\", line 71, in load_data\n"
           "    tools.convert_file(env, package.name, filename, idref, mode, noupdate, kind)\n"
           "  File \"/usr/lib/python3/dist-packages/odoo/tools/convert.py\", line 627, in convert_sql_import\n"
           "    env.cr.execute(fp.read()) # FIXME: check for security issues\n");
  {
    const char *cls = psycopg2_class(state);
    if (cls) snprintf(f->exc, sizeof f->exc, "psycopg2.errors.%s: %s", cls, err);
    else snprintf(f->exc, sizeof f->exc, "psycopg2.DatabaseError: %s", err);
  }
  return -1;
}

/* Graph depth (odoo/modules/graph.py): base 0, a module one more than its deepest
 * dependency; -1 when a dependency is not loadable in STATES (the module is left out). */
static int mod_depth(struct mod *m, const char *const *states, int nstates, int guard) {
  if (strcmp(m->name, "base") == 0) return 0;
  if (guard > MAX_MODS || !m->installable) return -1;
  int in_state = 0;
  for (int i = 0; i < nstates; i++) in_state |= strcmp(m->state, states[i]) == 0;
  if (!in_state) return -1;
  int depth = 0;
  for (int i = 0; i < m->ndeps; i++) {
    struct mod *d = mod_by_name(m->deps[i]);
    int dd = d ? mod_depth(d, states, nstates, guard + 1) : -1;
    if (dd < 0) return -1;
    if (dd + 1 > depth) depth = dd + 1;
  }
  return depth;
}

static int by_depth_name(const void *a, const void *b) {
  const struct mod *x = *(const struct mod *const *)a, *y = *(const struct mod *const *)b;
  if (x->depth != y->depth) return x->depth - y->depth;
  return strcmp(x->name, y->name);
}

/* button_install: the module and its uninstalled dependencies, transitively, 'to install'. */
static void mark_install(PGconn *c, struct mod *m, int guard) {
  if (guard > MAX_MODS || strcmp(m->state, "uninstalled") != 0 || !m->installable) return;
  set_state(c, m, "to install");
  for (int i = 0; i < m->ndeps; i++) {
    struct mod *d = mod_by_name(m->deps[i]);
    if (d) mark_install(c, d, guard + 1);
  }
}

/* button_upgrade (odoo/addons/base/models/ir_module.py): the module and every installed
 * module depending on it, transitively, 'to upgrade' (for base: every installed module);
 * new uninstalled dependencies of those get installed. */
static void mark_upgrade(PGconn *c, struct mod *m) {
  struct mod *todo[MAX_MODS];
  int ntodo = 0;
  if (strcmp(m->state, "installed") != 0) return;
  todo[ntodo++] = m;
  if (strcmp(m->name, "base") == 0)
    for (int i = 0; i < nmods; i++)
      if (strcmp(mods[i].state, "installed") == 0 && &mods[i] != m) todo[ntodo++] = &mods[i];
  for (int i = 0; i < ntodo; i++)
    for (int k = 0; k < nmods; k++) {
      struct mod *dep = &mods[k];
      if (strcmp(dep->state, "installed") != 0) continue;
      int depends = 0, listed = 0;
      for (int j = 0; j < dep->ndeps; j++) depends |= strcmp(dep->deps[j], todo[i]->name) == 0;
      for (int j = 0; j < ntodo; j++) listed |= todo[j] == dep;
      if (depends && !listed && ntodo < MAX_MODS) todo[ntodo++] = dep;
    }
  for (int i = 0; i < ntodo; i++) set_state(c, todo[i], "to upgrade");
  for (int i = 0; i < ntodo; i++)
    for (int j = 0; j < todo[i]->ndeps; j++) {
      struct mod *d = mod_by_name(todo[i]->deps[j]);
      if (d) mark_install(c, d, 0);
    }
}

/* update_list: every module folder of the add-ons path gets a row (uninstalled, or
 * uninstallable); reading every manifest, so an invalid one fails here as in Odoo. */
static int update_modules_list(PGconn *c, struct failure *f) {
  char dirs[MAX_ADDONS_DIRS][512];
  int n = addons_dirs(dirs, MAX_ADDONS_DIRS);
  log_line("INFO", "odoo.modules.loading", "updating modules list");
  for (int i = 0; i < n; i++) {
    DIR *d = opendir(dirs[i]);
    if (!d) continue;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!module_name_ok(e->d_name) || strcmp(e->d_name, "base") == 0) continue;
      char path[1200];
      snprintf(path, sizeof path, "%s/%s/__manifest__.py", dirs[i], e->d_name);
      if (!file_exists(path)) continue;
      struct mod probe;
      memset(&probe, 0, sizeof probe);
      snprintf(probe.name, sizeof probe.name, "%s", e->d_name);
      read_manifest(&probe);
      if (probe.invalid) {
        snprintf(f->where, sizeof f->where,
                 "  File \"/usr/lib/python3/dist-packages/odoo/addons/base/models/ir_module.py\", line 703, in update_list\n"
                 "    terp = self.get_module_info(mod_name)\n"
                 "  File \"/usr/lib/python3/dist-packages/odoo/modules/module.py\", line 330, in load_manifest\n"
                 "    raise ValueError(f\"Module {module}: invalid manifest\") from e\n");
        snprintf(f->exc, sizeof f->exc, "ValueError: Module %s: invalid manifest", probe.name);
        closedir(d);
        return -1;
      }
      const char *params[] = {probe.name, probe.installable ? "uninstalled" : "uninstallable",
                              probe.author[0] ? probe.author : NULL, probe.license};
      exec_params(c,
                  "INSERT INTO ir_module_module (name, state, author, license) VALUES ($1, $2, $3, $4) "
                  "ON CONFLICT (name) DO UPDATE SET state = CASE WHEN ir_module_module.state IN ('uninstalled', "
                  "'uninstallable') THEN EXCLUDED.state ELSE ir_module_module.state END",
                  4, params);
    }
    closedir(d);
  }
  return 0;
}

/* _check_module_names: names of -i/-u that no module has are ignored, with a warning. */
static void check_module_names(PGconn *c, const char *init, const char *update) {
  char copy[4096], bad[2048] = "";
  snprintf(copy, sizeof copy, "%s,%s", init ? init : "", update ? update : "");
  char *save = NULL;
  for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
    p = trim(p);
    if (!*p || strcmp(p, "all") == 0) continue;
    const char *params[] = {p};
    PGresult *r = PQexecParams(c, "SELECT 1 FROM ir_module_module WHERE name = $1", 1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 0 && !strstr(bad, p))
      snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "%s%s", *bad ? ", " : "", p);
    PQclear(r);
  }
  if (*bad) log_line("WARNING", "odoo.modules.loading", "invalid module names, ignored: %s", bad);
}

/* odoo.modules.reset_modules_state (Registry.new, when loading raised). */
static void reset_modules_state(PGconn *c) {
  if (PQtransactionStatus(c) != PQTRANS_IDLE) exec_ok(c, "ROLLBACK");
  exec_ok(c, "UPDATE ir_module_module SET state = 'installed' WHERE state IN ('to remove', 'to upgrade')");
  exec_ok(c, "UPDATE ir_module_module SET state = 'uninstalled' WHERE state = 'to install'");
  log_line("WARNING", "odoo.modules.loading", "Transient module states were reset");
}

enum load_result { LOAD_OK = 0, LOAD_NOT_INITIALIZED = 1, LOAD_FAILED = -2, LOAD_FATAL = -1 };

/* The demo data wanted for new installs (config.py per series, see main). */
static int want_demo;

/* Loads the graph of modules in STATES (load_marked_modules -> load_module_graph): every
 * module of the graph in dependency order, index/count over the whole graph; a module that
 * needs an update logs "Loading module x (n/m)" at INFO (DEBUG otherwise, not shown),
 * is imported, then loaded. */
static int load_graph(PGconn *c, const char *const *states, int nstates, int base_demo, struct failure *f) {
  struct mod *graph[MAX_MODS];
  int n = 0, fresh = 0;
  for (int i = 0; i < nmods; i++) {
    struct mod *m = &mods[i];
    if (m->in_graph) {
      graph[n++] = m;
      continue;
    }
    int in_state = 0;
    for (int k = 0; k < nstates; k++) in_state |= strcmp(m->state, states[k]) == 0;
    if (!in_state) continue;
    if (m->invalid) {
      snprintf(f->where, sizeof f->where,
               "  File \"/usr/lib/python3/dist-packages/odoo/modules/graph.py\", line 76, in add_modules\n"
               "    info = odoo.modules.module.get_manifest(module)\n"
               "  File \"/usr/lib/python3/dist-packages/odoo/modules/module.py\", line 330, in load_manifest\n"
               "    raise ValueError(f\"Module {module}: invalid manifest\") from e\n");
      snprintf(f->exc, sizeof f->exc, "ValueError: Module %s: invalid manifest", m->name);
      return -1;
    }
    if (!m->known || !m->installable) {
      /* odoo/modules/graph.py add_modules: left out of the graph. */
      log_line("WARNING", "odoo.modules.graph", "module %s: not installable, skipped", m->name);
      continue;
    }
    m->depth = mod_depth(m, (const char *const[]){"installed", "to upgrade", "to remove", "to install"}, 4, 0);
    if (m->depth < 0) continue;
    m->in_graph = 1;
    graph[n++] = m;
    fresh++;
  }
  if (!fresh) return 0;
  qsort(graph, (size_t)n, sizeof graph[0], by_depth_name);
  log_line("INFO", "odoo.modules.loading", "loading %d modules...", n);
  for (int i = 0; i < n; i++) {
    struct mod *m = graph[i];
    if (m->in_graph == 2) continue; /* loaded before (skip_modules) */
    m->in_graph = 2;
    int needs_update = strcmp(m->state, "to install") == 0 || strcmp(m->state, "to upgrade") == 0;
    if (needs_update) log_line("INFO", "odoo.modules.loading", "Loading module %s (%d/%d)", m->name, i + 1, n);
    if (import_module(m, f) != 0) return -1;
    if (needs_update && update_module_data(c, m, want_demo, base_demo, f) != 0) return -1;
    if (needs_update && conf_get("test_enable")) { extern void tests_at_install(const char *, const char *, const char *, void (*)(const char *, const char *, const char *, ...)); tests_at_install(m->name, m->dir, conf_get("test_tags"), log_line); } /* tests.c */
  }
  return 0;
}

/* Registry.new -> load_modules (odoo/modules/loading.py). Returns LOAD_OK,
 * LOAD_NOT_INITIALIZED (an existing database without Odoo's tables and no -i/-u: logged,
 * nothing loaded), LOAD_FAILED (a module failed: states reset, traceback ready), or
 * LOAD_FATAL (the database could not be reached). */
static int load_modules(int init_base) {
  PGconn *c = db_connect(db_name, 5);
  if (!c) {
    log_line("ERROR", "odoo.sql_db", "%s", last_db_error);
    return LOAD_FATAL;
  }
  /* Two containers starting on one database initialise it once, one after the other. */
  if (!exec_ok(c, "SELECT pg_advisory_lock(4242)")) {
    PQfinish(c);
    return LOAD_FATAL;
  }
  const char *init = conf_get("init"), *update = conf_get("update");
  int update_module = init || update || init_base;
  struct failure f = {"", ""};
  int result = LOAD_OK;
  PGresult *r = PQexec(c, "SELECT to_regclass('public.ir_module_module') IS NULL, "
                          "to_regclass('public.berth_probe') IS NULL");
  int ok = PQresultStatus(r) == PGRES_TUPLES_OK;
  int fresh = ok && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
  int no_probe = ok && strcmp(PQgetvalue(r, 0, 1), "t") == 0;
  PQclear(r);
  if (ok && fresh && !update_module) {
    /* loading.py load_modules: an existing database without Odoo's tables is refused. */
    log_line("ERROR", "odoo.modules.loading", "Database %s not initialized, you can force it with `-i base`", db_name);
    exec_ok(c, "SELECT pg_advisory_unlock(4242)");
    PQfinish(c);
    return LOAD_NOT_INITIALIZED;
  }
  ok = ok && exec_ok(c, "BEGIN");
  if (ok && fresh) {
    log_line("INFO", "odoo.modules.loading", "init db");
    ok = exec_ok(c, "CREATE TABLE public.ir_module_module (id serial PRIMARY KEY, name varchar NOT NULL UNIQUE, "
                    "state varchar(16) NOT NULL DEFAULT 'uninstalled', latest_version varchar, "
                    "demo boolean NOT NULL DEFAULT false, author varchar, license varchar(32), "
                    "create_date timestamp NOT NULL DEFAULT (now() at time zone 'UTC'), "
                    "write_date timestamp NOT NULL DEFAULT (now() at time zone 'UTC'))") &&
         exec_ok(c, "INSERT INTO public.ir_module_module (name, state, author, license) "
                    "VALUES ('base', 'to install', 'Odoo S.A.', 'LGPL-3')") &&
         /* base's users: __system__ (id 1, no login) and the administrator, admin/admin. */
         exec_ok(c, "CREATE TABLE IF NOT EXISTS public.res_users (id serial PRIMARY KEY, login varchar NOT NULL UNIQUE, "
                    "password varchar, active boolean NOT NULL DEFAULT true)") &&
         exec_ok(c, "INSERT INTO public.res_users (login, password, active) VALUES ('__system__', NULL, false), "
                    "('admin', 'admin', true) ON CONFLICT (login) DO NOTHING");
  }
  if (ok && no_probe)
    ok = exec_ok(c, "CREATE TABLE public.berth_probe (id serial PRIMARY KEY, note text NOT NULL, "
                    "created_at timestamptz NOT NULL DEFAULT now())") &&
         exec_ok(c, "INSERT INTO public.berth_probe (note) VALUES ('created on first start')");
  if (ok && (in_list(update, "base") || in_list(update, "all")))
    ok = exec_ok(c, "UPDATE ir_module_module SET state = 'to upgrade' WHERE name = 'base' AND state = 'installed'");
  ok = ok && exec_ok(c, "COMMIT");
  if (!ok || read_modules(c) != 0) {
    exec_ok(c, "SELECT pg_advisory_unlock(4242)");
    PQfinish(c);
    return LOAD_FATAL;
  }

  /* STEP 1: base. */
  struct mod *base = mod_by_name("base");
  if (base) {
    base->in_graph = 2;
    int needs_update = strcmp(base->state, "to install") == 0 || strcmp(base->state, "to upgrade") == 0;
    log_line("INFO", "odoo.modules.loading", "loading 1 modules...");
    if (needs_update) log_line("INFO", "odoo.modules.loading", "Loading module base (1/1)");
    if (import_module(base, &f) != 0 || (needs_update && update_module_data(c, base, want_demo, 0, &f) != 0))
      result = LOAD_FAILED;
  }
  /* STEP 2: mark what -i and -u ask for (update_list first). */
  if (result == LOAD_OK && update_module) {
    if (update_modules_list(c, &f) != 0 || read_modules(c) != 0) result = LOAD_FAILED;
    else {
      base = mod_by_name("base");
      if (base) base->in_graph = 2;
      check_module_names(c, init, update);
      for (int i = 0; i < nmods; i++) {
        if (in_list(init, mods[i].name)) mark_install(c, &mods[i], 0);
      }
      for (int i = 0; i < nmods; i++)
        if (strcmp(mods[i].name, "base") != 0 && in_list(update, mods[i].name)) mark_upgrade(c, &mods[i]);
      /* -u base / -u all: base was upgraded in STEP 1; button_upgrade marks every installed module. */
      if (base && (in_list(update, "base") || in_list(update, "all"))) {
        snprintf(base->state, sizeof base->state, "installed");
        mark_upgrade(c, base);
        set_state(c, base, "installed");
        base->in_graph = 2;
      }
    }
  }
  /* STEP 3: the installed (or upgrading) modules, then the new installs. */
  if (result == LOAD_OK) {
    int base_demo = base && base->demo;
    if (load_graph(c, (const char *const[]){"installed", "to upgrade", "to remove"}, 3, base_demo, &f) != 0 ||
        load_graph(c, (const char *const[]){"to install"}, 1, base_demo, &f) != 0)
      result = LOAD_FAILED;
  }
  if (result == LOAD_OK && !update_module) {
    /* odoo/modules/loading.py load_modules (16.0+), at every start: installed modules the
     * registry did not load (their code is not on the add-ons path, e.g. Enterprise modules on
     * the Community image) are logged, and the server serves without them. */
    char missing[2048] = "";
    for (int i = 0; i < nmods; i++) {
      struct mod *m = &mods[i];
      int loaded_state = strcmp(m->state, "installed") == 0 || strcmp(m->state, "to upgrade") == 0 || strcmp(m->state, "to remove") == 0;
      if (!loaded_state || m->in_graph) continue;
      size_t used = strlen(missing);
      snprintf(missing + used, sizeof missing - used, "%s'%s'", used ? ", " : "", m->name);
    }
    if (*missing)
      log_line("ERROR", "odoo.modules.loading", "Some modules are not loaded, some dependencies or manifest may be missing: [%s]", missing);
  }
  if (result == LOAD_OK && update_module) {
    /* Modules still marked: their dependencies or manifest were missing (loading.py). */
    PGresult *left = PQexec(c, "SELECT coalesce(string_agg(quote_literal(name), ', ' ORDER BY name), '') FROM "
                               "ir_module_module WHERE state IN ('to install', 'to upgrade')");
    if (PQresultStatus(left) == PGRES_TUPLES_OK && *PQgetvalue(left, 0, 0)) {
      log_line("ERROR", "odoo.modules.loading",
               "Some modules are not loaded, some dependencies or manifest may be missing: [%s]", PQgetvalue(left, 0, 0));
      exec_ok(c, "UPDATE ir_module_module SET state = 'installed' WHERE state = 'to upgrade'");
      exec_ok(c, "UPDATE ir_module_module SET state = 'uninstalled' WHERE state = 'to install'");
    }
    PQclear(left);
  }
  if (result == LOAD_FAILED) {
    reset_modules_state(c);
    /* Registry.new: logged (no traceback) before re-raising. */
    log_line("ERROR", series_major >= 19 ? "odoo.registry" : "odoo.modules.registry", "Failed to load registry");
    set_traceback(f.where, f.exc);
  }
  exec_ok(c, "SELECT pg_advisory_unlock(4242)");
  PQfinish(c);
  return result;
}

/* Whether a request for the database would get a registry (http.py: Registry(db) loads it,
 * as at start, for every request until it loads): Odoo's tables exist and no module to be
 * loaded fails its import or has an invalid manifest. Logs the module's failure as Odoo
 * logs it on each attempt. Returns 1 when the registry loads. */
static int registry_loads(void) {
  PGconn *c = db_connect(db_name, 5);
  if (!c) return 0;
  int ok = 0;
  PGresult *r = PQexec(c, "SELECT to_regclass('public.ir_module_module') IS NOT NULL");
  if (PQresultStatus(r) == PGRES_TUPLES_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0 && read_modules(c) == 0) {
    ok = 1;
    for (int i = 0; ok && i < nmods; i++) {
      struct mod *m = &mods[i];
      if (strcmp(m->state, "installed") != 0 && strcmp(m->state, "to upgrade") != 0 && strcmp(m->state, "to remove") != 0)
        continue;
      if (m->invalid || import_module(m, NULL) != 0) ok = 0;
    }
    if (!ok) {
      log_line("WARNING", "odoo.modules.loading", "Transient module states were reset");
      log_line("ERROR", series_major >= 19 ? "odoo.registry" : "odoo.modules.registry", "Failed to load registry");
    }
  }
  PQclear(r);
  PQfinish(c);
  return ok;
}

static void marker_path(char *out, size_t size) {
  snprintf(out, size, "%s/filestore/%s/%.2s/%s", conf_or("data_dir", "/var/lib/odoo"), db_name, MARKER_SHA1,
           MARKER_SHA1);
}

static int mkdirs(const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
      *p = '/';
    }
  return mkdir(tmp, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* Real Odoo only logs when its data dir is not writable, so this only warns. */
static void write_filestore_marker(void) {
  char path[1024], dir[1024];
  marker_path(path, sizeof path);
  if (file_exists(path)) return;
  snprintf(dir, sizeof dir, "%s", path);
  *strrchr(dir, '/') = 0;
  FILE *f = mkdirs(dir) == 0 ? fopen(path, "w") : NULL;
  if (!f || fputs(MARKER_CONTENT, f) < 0 || fclose(f) != 0) {
    log_line("WARNING", "odoo.addons.base.models.ir_attachment", "cannot write file store %s: %s", path,
             strerror(errno));
    return;
  }
  log_line("INFO", "odoo.addons.base.models.ir_attachment", "file store marker written to %s", path);
}

/* ---------- HTTP ---------- */

struct buf { char *data; size_t len, cap; };

static void buf_add(struct buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) _exit(70);
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

static void buf_str(struct buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_printf(struct buf *b, const char *fmt, ...) {
  char tmp[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void buf_json_string(struct buf *b, const char *s) {
  if (!s) {
    buf_str(b, "null");
    return;
  }
  buf_str(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      char e[2] = {'\\', (char)*p};
      buf_add(b, e, 2);
    } else if (*p < 0x20) {
      buf_printf(b, "\\u%04x", *p);
    } else {
      buf_add(b, (const char *)p, 1);
    }
  }
  buf_str(b, "\"");
}

static void buf_html(struct buf *b, const char *s) {
  for (; *s; s++) switch (*s) {
      case '<': buf_str(b, "&lt;"); break;
      case '>': buf_str(b, "&gt;"); break;
      case '&': buf_str(b, "&amp;"); break;
      case '"': buf_str(b, "&quot;"); break;
      default: buf_add(b, s, 1);
    }
}

struct request {
  char method[16];
  char path[1024];
  char query[2048];
  char content_type[128];
  char peer[64];
  int port; /* the local port the connection arrived on (http_port or gevent_port) */
  char host[256];
  char upgrade[64];
  char connection[128];
  char ws_key[128];
  char ws_version[16];
  char forwarded_proto[32];
  char forwarded_for[512];
  char forwarded_host[256];
  char *body;
  size_t body_len;
  char *early; /* bytes the client sent after the request (a websocket frame, say) */
  size_t early_len;
  int keep_alive; /* the client allows another request on this connection */
};

/* Set when the answer to the current request ends the connection (respond(), websockets). */
static int connection_ends;

/* If LINE (a header line ending in CRLF) is header NAME (any case), copies its value,
 * trimmed and cut to SIZE - 1 bytes, into OUT and returns 1. With APPEND, a value already
 * in OUT is kept and this one added after ", " (repeated list headers such as X-Forwarded-For). */
static int header_copy(const char *line, const char *name, char *out, size_t size, int append) {
  size_t nl = strlen(name);
  if (strncasecmp(line, name, nl) != 0 || line[nl] != ':') return 0;
  const char *v = line + nl + 1;
  size_t n = strcspn(v, "\r\n");
  while (n && (*v == ' ' || *v == '\t')) v++, n--;
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  size_t o = append ? strlen(out) : 0;
  if (o && o + 2 < size) {
    memcpy(out + o, ", ", 2);
    o += 2;
  }
  if (o + n >= size) n = o < size ? size - 1 - o : 0;
  memcpy(out + o, v, n);
  out[o + n] = 0;
  return 1;
}

/* Whether a comma-separated header value (Connection, Upgrade) holds TOKEN, in any case. */
static int has_token(const char *list, const char *token) {
  size_t tl = strlen(token);
  for (const char *p = list; *p;) {
    while (*p == ' ' || *p == '\t' || *p == ',') p++;
    size_t n = strcspn(p, ",");
    size_t m = n;
    while (m && (p[m - 1] == ' ' || p[m - 1] == '\t')) m--;
    if (m == tl && strncasecmp(p, token, tl) == 0) return 1;
    p += n;
  }
  return 0;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Every answer has its Content-Length, so a persistent connection stays in step. Errors about
 * the request itself (400, 408, 413) end the connection: what follows may not be a request. */
static void respond(int fd, const struct request *rq, int status, const char *type, const char *body) {
  const char *reason = status == 200 ? "OK" : status == 201 ? "Created" : status == 400 ? "Bad Request"
                     : status == 404 ? "Not Found" : status == 405 ? "Method Not Allowed"
                     : status == 408 ? "Request Timeout" : status == 413 ? "Payload Too Large"
                     : status == 503 ? "Service Unavailable" : "Internal Server Error";
  size_t len = strlen(body);
  int keep = rq->keep_alive && status != 400 && status != 408 && status != 413;
  if (!keep) connection_ends = 1;
  char head[512];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
                   "Server: berth-erp-standin\r\nConnection: %s\r\n\r\n",
                   status, reason, type, len, keep ? "keep-alive\r\nKeep-Alive: timeout=" STR(KEEPALIVE_SECONDS) : "close");
  /* One write per answer: a head and a body written apart would, on a kept-alive connection,
   * leave the body to Nagle's algorithm and the client's delayed ACK (40 ms per request). */
  struct buf out = {0};
  buf_add(&out, head, (size_t)n);
  if (strcmp(rq->method, "HEAD") != 0) buf_add(&out, body, len);
  write_all(fd, out.data, out.len);
  free(out.data);
  log_line("INFO", "werkzeug", "%s - - \"%s %s%s%s HTTP/1.1\" %d - 0 0.000 0.000", rq->peer, rq->method,
           rq->path, rq->query[0] ? "?" : "", rq->query, status);
}

static void respond_json(int fd, const struct request *rq, int status, struct buf *b) {
  respond(fd, rq, status, "application/json", b->data ? b->data : "");
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static void url_decode(const char *in, size_t len, char *out, size_t size) {
  size_t o = 0;
  for (size_t i = 0; i < len && o + 1 < size; i++) {
    if (in[i] == '+') out[o++] = ' ';
    else if (in[i] == '%' && i + 2 < len && hexval(in[i + 1]) >= 0 && hexval(in[i + 2]) >= 0) {
      out[o++] = (char)(hexval(in[i + 1]) * 16 + hexval(in[i + 2]));
      i += 2;
    } else out[o++] = in[i];
  }
  out[o] = 0;
}

/* Value of `name` in an application/x-www-form-urlencoded string, or NULL. */
static int form_value(const char *form, size_t len, const char *name, char *out, size_t size) {
  size_t nl = strlen(name);
  const char *end = form + len;
  for (const char *p = form; p < end;) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    if (!amp) amp = end;
    if ((size_t)(amp - p) > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
      url_decode(p + nl + 1, (size_t)(amp - p - nl - 1), out, size);
      return 1;
    }
    if ((size_t)(amp - p) == nl && strncmp(p, name, nl) == 0) {
      out[0] = 0;
      return 1;
    }
    p = amp + 1;
  }
  return 0;
}

static void put_utf8(unsigned cp, char *out, size_t *o, size_t size) {
  unsigned char u[4];
  int n;
  if (cp < 0x80) { u[0] = (unsigned char)cp; n = 1; }
  else if (cp < 0x800) { u[0] = (unsigned char)(0xC0 | (cp >> 6)); u[1] = (unsigned char)(0x80 | (cp & 0x3F)); n = 2; }
  else if (cp < 0x10000) {
    u[0] = (unsigned char)(0xE0 | (cp >> 12)); u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp & 0x3F)); n = 3;
  } else {
    u[0] = (unsigned char)(0xF0 | (cp >> 18)); u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (unsigned char)(0x80 | (cp & 0x3F)); n = 4;
  }
  for (int i = 0; i < n && *o + 1 < size; i++) out[(*o)++] = (char)u[i];
}

/* The string value of "note" in a JSON object: enough JSON for {"note": "..."}. */
/* The string value of the first "KEY": "..." in a JSON body (no nesting awareness: enough
 * for the stand-in's own requests). */
static int json_string(const char *body, const char *key, char *out, size_t size) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "\"%s\"", key);
  const char *p = strstr(body, quoted);
  if (!p) return 0;
  p += strlen(quoted);
  while (isspace((unsigned char)*p)) p++;
  if (*p++ != ':') return 0;
  while (isspace((unsigned char)*p)) p++;
  if (*p++ != '"') return 0;
  size_t o = 0;
  while (*p && *p != '"') {
    if (*p != '\\') {
      if (o + 1 < size) out[o++] = *p;
      p++;
      continue;
    }
    p++;
    char c = *p ? *p++ : 0;
    switch (c) {
      case 'n': c = '\n'; break;
      case 't': c = '\t'; break;
      case 'r': c = '\r'; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'u': {
        unsigned cp = 0;
        for (int i = 0; i < 4; i++) {
          int h = hexval(*p);
          if (h < 0) return 0;
          cp = cp * 16 + (unsigned)h;
          p++;
        }
        if (cp >= 0xD800 && cp < 0xDC00 && p[0] == '\\' && p[1] == 'u') {
          unsigned lo = 0;
          for (int i = 2; i < 6; i++) {
            int h = hexval(p[i]);
            if (h < 0) return 0;
            lo = lo * 16 + (unsigned)h;
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          p += 6;
        }
        put_utf8(cp, out, &o, size);
        continue;
      }
      default: break; /* \" \\ \/ stand for themselves */
    }
    if (o + 1 < size) out[o++] = c;
  }
  if (*p != '"') return 0;
  out[o] = 0;
  return 1;
}

static void error_json(struct buf *b, const char *message) {
  buf_str(b, "{\"error\": ");
  buf_json_string(b, message);
  buf_str(b, "}");
}

static const char *ROWS_SQL =
    "SELECT coalesce(jsonb_agg(jsonb_build_object('id', id, 'note', note, 'created_at', created_at) ORDER BY id), "
    "'[]')::text FROM public.berth_probe";

/* GET /web/health (addons/web/controllers/webclient.py, 16.0+): 200 {"status": "pass"}
 * whenever HTTP is up, whatever the registry. 18.0 adds ?db_server_status=1 (true when
 * PostgreSQL answers; 500 and "fail" when it does not); 16.0 and 17.0 ignore the parameter. */
static void handle_health(int fd, const struct request *rq) {
  struct buf b = {0};
  char flag[16];
  int check_db = series_major >= 18 && form_value(rq->query, strlen(rq->query), "db_server_status", flag, sizeof flag) &&
                 flag[0] && strcmp(flag, "0") != 0 && strcasecmp(flag, "false") != 0;
  int status = 200;
  buf_str(&b, "{\"status\": \"pass\"");
  if (check_db) {
    PGconn *c = db_connect("postgres", 3);
    if (c) {
      PQfinish(c);
      buf_str(&b, ", \"db_server_status\": true}");
    } else {
      b.len = 0;
      buf_str(&b, "{\"status\": \"fail\", \"db_server_status\": false}");
      status = 500;
    }
  } else {
    buf_str(&b, "}");
  }
  respond_json(fd, rq, status, &b);
}

/* werkzeug's InternalServerError page, as Odoo answers a request whose registry cannot be
 * loaded (odoo/http.py: the exception of Registry(db) reaches the WSGI app, 500). */
static const char *INTERNAL_ERROR_HTML =
    "<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n<h1>Internal Server Error</h1>\n"
    "<p>The server encountered an internal error and was unable to complete your request. Either the server is "
    "overloaded or there is an error in the application.</p>\n";

static void handle_rows(int fd, const struct request *rq) {
  struct buf b = {0};
  PGconn *c = db_connect(db_name, 5);
  if (!c) {
    log_line("WARNING", "odoo.sql_db", "connection to %s failed: %s", db_name, last_db_error);
    error_json(&b, "database unreachable");
    respond_json(fd, rq, 503, &b);
    return;
  }
  PGresult *r = PQexec(c, ROWS_SQL);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    error_json(&b, trim(PQresultErrorMessage(r)));
    respond_json(fd, rq, 500, &b);
  } else {
    char marker[1024];
    marker_path(marker, sizeof marker);
    buf_str(&b, "{\"database\": ");
    buf_json_string(&b, db_name);
    buf_str(&b, ", \"server_version\": ");
    buf_json_string(&b, server_version);
    buf_str(&b, ", \"addons_version\": ");
    buf_json_string(&b, addons_version_set ? addons_version : NULL);
    buf_printf(&b, ", \"filestore_marker\": %s, \"rows\": ", file_exists(marker) ? "true" : "false");
    buf_str(&b, PQgetvalue(r, 0, 0));
    buf_str(&b, "}");
    respond_json(fd, rq, 200, &b);
  }
  PQclear(r);
  PQfinish(c);
}

static void handle_add(int fd, const struct request *rq) {
  struct buf b = {0};
  char note[8192];
  int found;
  if (strcmp(rq->method, "GET") == 0) {
    found = form_value(rq->query, strlen(rq->query), "note", note, sizeof note);
  } else if (strncasecmp(rq->content_type, "application/json", 16) == 0) {
    found = rq->body && json_string(rq->body, "note", note, sizeof note);
  } else if (strncasecmp(rq->content_type, "application/x-www-form-urlencoded", 33) == 0) {
    found = rq->body && form_value(rq->body, rq->body_len, "note", note, sizeof note);
  } else {
    size_t n = rq->body_len < sizeof note - 1 ? rq->body_len : sizeof note - 1;
    if (n) memcpy(note, rq->body, n);
    note[n] = 0;
    found = n > 0;
  }
  if (!found || !note[0]) {
    error_json(&b, "give a non-empty note: ?note=..., {\"note\": \"...\"}, a form field or a text body");
    respond_json(fd, rq, 400, &b);
    return;
  }
  PGconn *c = db_connect(db_name, 5);
  if (!c) {
    log_line("WARNING", "odoo.sql_db", "connection to %s failed: %s", db_name, last_db_error);
    error_json(&b, "database unreachable");
    respond_json(fd, rq, 503, &b);
    return;
  }
  const char *params[] = {note};
  PGresult *r = PQexecParams(c,
                             "INSERT INTO public.berth_probe (note) VALUES ($1) RETURNING "
                             "jsonb_build_object('id', id, 'note', note, 'created_at', created_at)::text",
                             1, NULL, params, NULL, NULL, 0);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    error_json(&b, trim(PQresultErrorMessage(r)));
    respond_json(fd, rq, 500, &b);
  } else {
    buf_str(&b, PQgetvalue(r, 0, 0));
    respond_json(fd, rq, 201, &b);
  }
  PQclear(r);
  PQfinish(c);
}

/* passlib's adapted base64 ('.' for '+', no padding) to bytes; -1 when malformed. */
static int ab64_decode(const char *in, unsigned char *out, size_t size) {
  char std[512];
  size_t n = strlen(in);
  if (n == 0 || n + 3 >= sizeof std) return -1;
  for (size_t i = 0; i < n; i++) std[i] = in[i] == '.' ? '+' : in[i];
  size_t pad = (4 - n % 4) % 4;
  if (pad == 3) return -1;
  memset(std + n, '=', pad);
  std[n + pad] = 0;
  if ((n + pad) / 4 * 3 > size) return -1;
  int len = EVP_DecodeBlock(out, (const unsigned char *)std, (int)(n + pad));
  return len < 0 ? -1 : len - (int)pad;
}

/* Odoo's password check (res.users _check_credentials through passlib's CryptContext with
 * pbkdf2_sha512 and plaintext): "$pbkdf2-sha512$<rounds>$<salt>$<checksum>", or a plain
 * text value as written by SQL (Odoo accepts it and hashes it at the next login). */
static int password_matches(const char *stored, const char *given) {
  const char *prefix = "$pbkdf2-sha512$";
  if (strncmp(stored, prefix, strlen(prefix)) != 0) return strcmp(stored, given) == 0;
  char copy[512];
  snprintf(copy, sizeof copy, "%s", stored + strlen(prefix));
  char *rounds_s = copy, *salt_s = strchr(rounds_s, '$');
  if (!salt_s) return 0;
  *salt_s++ = 0;
  char *sum_s = strchr(salt_s, '$');
  if (!sum_s) return 0;
  *sum_s++ = 0;
  long rounds = strtol(rounds_s, NULL, 10);
  unsigned char salt[256], sum[128], got[64];
  int salt_len = ab64_decode(salt_s, salt, sizeof salt), sum_len = ab64_decode(sum_s, sum, sizeof sum);
  if (rounds < 1 || rounds > 10000000 || salt_len < 0 || sum_len != 64) return 0;
  if (!PKCS5_PBKDF2_HMAC(given, (int)strlen(given), salt, salt_len, (int)rounds, EVP_sha512(), 64, got)) return 0;
  return CRYPTO_memcmp(got, sum, 64) == 0;
}

/* POST /web/session/authenticate, JSON-RPC as the web client sends it:
 * {"params": {"db", "login", "password"}} -> {"result": {"uid", ...}} or Odoo's AccessDenied
 * error (HTTP 200, as Odoo answers it). */
static void handle_authenticate(int fd, const struct request *rq) {
  struct buf b = {0};
  char login[256], password[1024];
  if (!rq->body || !json_string(rq->body, "login", login, sizeof login) || !json_string(rq->body, "password", password, sizeof password)) {
    error_json(&b, "give {\"params\": {\"db\", \"login\", \"password\"}}");
    respond_json(fd, rq, 400, &b);
    return;
  }
  PGconn *c = db_connect(db_name, 5);
  if (!c) {
    error_json(&b, "database unreachable");
    respond_json(fd, rq, 503, &b);
    return;
  }
  const char *params[] = {login};
  PGresult *r = PQexecParams(c, "SELECT id, coalesce(password, '') FROM public.res_users WHERE login = $1 AND active", 1, NULL,
                             params, NULL, NULL, 0);
  int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && password_matches(PQgetvalue(r, 0, 1), password);
  if (ok) {
    log_line("INFO", "odoo.addons.base.models.res_users", "Login successful for db:%s login:%s from %s", db_name, login, rq->peer);
    buf_str(&b, "{\"jsonrpc\": \"2.0\", \"id\": null, \"result\": {\"uid\": ");
    buf_str(&b, PQgetvalue(r, 0, 0));
    buf_str(&b, ", \"db\": ");
    buf_json_string(&b, db_name);
    buf_str(&b, ", \"username\": ");
    buf_json_string(&b, login);
    buf_str(&b, "}}");
  } else {
    log_line("INFO", "odoo.addons.base.models.res_users", "Login failed for db:%s login:%s from %s", db_name, login, rq->peer);
    buf_str(&b, "{\"jsonrpc\": \"2.0\", \"id\": null, \"error\": {\"code\": 200, \"message\": \"Odoo Server Error\", "
                "\"data\": {\"name\": \"odoo.exceptions.AccessDenied\", \"message\": \"Access Denied\"}}}");
  }
  respond_json(fd, rq, 200, &b);
  PQclear(r);
  PQfinish(c);
}

/* GET /, /web, /web/login: need the database's registry (odoo/http.py _serve_db): 500 when it
 * does not load (a module that fails to import, an uninitialised database), else the page. */
static void handle_index(int fd, const struct request *rq) {
  if (!registry_loads()) {
    respond(fd, rq, 500, "text/html; charset=utf-8", INTERNAL_ERROR_HTML);
    return;
  }
  struct buf b = {0};
  buf_str(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Berth ERP stand-in</title></head><body>\n");
  buf_str(&b, "<h1>Berth ERP stand-in</h1>\n<p>Database: <code>");
  buf_html(&b, db_name);
  buf_str(&b, "</code>, server ");
  buf_html(&b, server_version);
  buf_str(&b, ", addons version: <code>");
  buf_html(&b, addons_version_set ? addons_version : "(none)");
  buf_str(&b, "</code></p>\n");
  int status = 200;
  PGconn *c = db_connect(db_name, 5);
  PGresult *r = c ? PQexec(c, "SELECT id, note, created_at FROM public.berth_probe ORDER BY id") : NULL;
  if (!c) {
    buf_str(&b, "<p class=\"error\">database unreachable</p>\n");
    status = 503;
  } else if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    buf_str(&b, "<p class=\"error\">");
    buf_html(&b, PQresultErrorMessage(r));
    buf_str(&b, "</p>\n");
    status = 500;
  } else {
    buf_str(&b, "<table id=\"rows\">\n<tr><th>id</th><th>note</th><th>created_at</th></tr>\n");
    for (int i = 0; i < PQntuples(r); i++) {
      buf_str(&b, "<tr>");
      for (int j = 0; j < 3; j++) {
        buf_str(&b, "<td>");
        buf_html(&b, PQgetvalue(r, i, j));
        buf_str(&b, "</td>");
      }
      buf_str(&b, "</tr>\n");
    }
    buf_str(&b, "</table>\n");
  }
  if (r) PQclear(r);
  if (c) PQfinish(c);
  buf_str(&b, "<form method=\"post\" action=\"/berth/rows\"><input name=\"note\"><button>Add</button></form>\n");
  buf_str(&b, "</body></html>\n");
  respond(fd, rq, status, "text/html; charset=utf-8", b.data);
}

static void handle_info(int fd, const struct request *rq) {
  struct buf b = {0};
  buf_str(&b, "{\"server_version\": ");
  buf_json_string(&b, server_version);
  buf_str(&b, ", \"database\": ");
  buf_json_string(&b, db_name);
  buf_str(&b, ", \"addons_version\": ");
  buf_json_string(&b, addons_version_set ? addons_version : NULL);
  buf_str(&b, ", \"config_file\": ");
  buf_json_string(&b, config_path);
  buf_printf(&b, ", \"uid\": %d, \"gid\": %d, \"options\": {", (int)getuid(), (int)getgid());
  for (int i = 0; i < nconf; i++) {
    if (i) buf_str(&b, ", ");
    buf_json_string(&b, conf[i].key);
    buf_str(&b, ": ");
    /* Passwords stay out of a response that tests may print. */
    buf_json_string(&b, strstr(conf[i].key, "passw") ? "********" : conf[i].value);
  }
  buf_str(&b, "}}");
  respond_json(fd, rq, 200, &b);
}

/* ir_module_module as JSON: [{"name", "state", "latest_version", "demo"}], by name. */
static void handle_modules(int fd, const struct request *rq) {
  struct buf b = {0};
  PGconn *c = db_connect(db_name, 5);
  if (!c) {
    log_line("WARNING", "odoo.sql_db", "connection to %s failed: %s", db_name, last_db_error);
    error_json(&b, "database unreachable");
    respond_json(fd, rq, 503, &b);
    return;
  }
  PGresult *r = PQexec(c, "SELECT to_regclass('public.ir_module_module') IS NULL");
  int missing = PQresultStatus(r) == PGRES_TUPLES_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
  PQclear(r);
  r = PQexec(c, missing ? "SELECT '[]'"
                        : "SELECT coalesce(jsonb_agg(jsonb_build_object('name', name, 'state', state, "
                          "'latest_version', latest_version, 'demo', demo) ORDER BY name), '[]')::text "
                          "FROM public.ir_module_module");
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    error_json(&b, trim(PQresultErrorMessage(r)));
    respond_json(fd, rq, 500, &b);
  } else {
    buf_str(&b, PQgetvalue(r, 0, 0));
    respond_json(fd, rq, 200, &b);
  }
  PQclear(r);
  PQfinish(c);
}

static void handle_version_info(int fd, const struct request *rq) {
  struct buf b = {0};
  buf_str(&b, "{\"jsonrpc\": \"2.0\", \"id\": null, \"result\": {\"server_version\": ");
  buf_json_string(&b, server_version);
  buf_printf(&b, ", \"server_version_info\": [%d, 0, 0, \"final\", 0, \"\"], \"server_serie\": ",
             server_version_major);
  buf_json_string(&b, server_version);
  buf_str(&b, ", \"protocol_version\": 1}}");
  respond_json(fd, rq, 200, &b);
}

/* What reached the server: for tests of a reverse proxy in front of it. */
static void request_json(struct buf *b, const struct request *rq) {
  buf_printf(b, "{\"port\": %d, \"method\": ", rq->port);
  buf_json_string(b, rq->method);
  buf_str(b, ", \"path\": ");
  buf_json_string(b, rq->path);
  buf_str(b, ", \"host\": ");
  buf_json_string(b, rq->host);
  buf_str(b, ", \"forwarded_proto\": ");
  buf_json_string(b, rq->forwarded_proto);
  buf_str(b, ", \"forwarded_for\": ");
  buf_json_string(b, rq->forwarded_for);
  buf_str(b, ", \"forwarded_host\": ");
  buf_json_string(b, rq->forwarded_host);
  buf_str(b, "}");
}

static void handle_request_report(int fd, const struct request *rq) {
  struct buf b = {0};
  request_json(&b, rq);
  respond_json(fd, rq, 200, &b);
}

/* ---------- WebSocket (RFC 6455), as Odoo's /websocket on gevent_port ---------- */

static uint32_t rol32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const unsigned char *p) {
  uint32_t w[80];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 80; i++) w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; i++) {
    uint32_t f, k;
    if (i < 20) f = (b & c) | (~b & d), k = 0x5A827999;
    else if (i < 40) f = b ^ c ^ d, k = 0x6ED9EBA1;
    else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
    else f = b ^ c ^ d, k = 0xCA62C1D6;
    uint32_t t = rol32(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rol32(b, 30);
    b = a;
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

static void sha1(const void *data, size_t len, unsigned char out[20]) {
  const unsigned char *p = data;
  uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  size_t i = 0;
  for (; i + 64 <= len; i += 64) sha1_block(h, p + i);
  /* The rest, 0x80, zeros, then the length in bits (big-endian) ending a 64-byte block. */
  unsigned char tail[128] = {0};
  size_t rest = len - i, tail_len = rest + 9 <= 64 ? 64 : 128;
  memcpy(tail, p + i, rest);
  tail[rest] = 0x80;
  uint64_t bits = (uint64_t)len * 8;
  for (int j = 0; j < 8; j++) tail[tail_len - 1 - j] = (unsigned char)(bits >> (8 * j));
  sha1_block(h, tail);
  if (tail_len == 128) sha1_block(h, tail + 64);
  for (int j = 0; j < 5; j++)
    for (int k = 0; k < 4; k++) out[4 * j + k] = (unsigned char)(h[j] >> (24 - 8 * k));
}

/* OUT needs 4 * ((n + 2) / 3) + 1 bytes. */
static void base64(const unsigned char *in, size_t n, char *out) {
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
    out[o++] = abc[v >> 18 & 63];
    out[o++] = abc[v >> 12 & 63];
    out[o++] = i + 1 < n ? abc[v >> 6 & 63] : '=';
    out[o++] = i + 2 < n ? abc[v & 63] : '=';
  }
  out[o] = 0;
}

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key: base64(sha1(key + the RFC's GUID)). */
static void ws_accept(const char *key, char out[29]) {
  char joined[256];
  int n = snprintf(joined, sizeof joined, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
  unsigned char digest[20];
  sha1(joined, n < (int)sizeof joined ? (size_t)n : sizeof joined - 1, digest);
  base64(digest, sizeof digest, out);
}

/* A server frame: FIN set, never masked, 7-bit, 16-bit or 64-bit length. */
static int ws_send(int fd, int opcode, const char *payload, size_t len) {
  struct buf b = {0};
  unsigned char h[10];
  size_t hn = 0;
  h[hn++] = (unsigned char)(0x80 | opcode);
  if (len < 126) {
    h[hn++] = (unsigned char)len;
  } else if (len <= 0xFFFF) {
    h[hn++] = 126;
    h[hn++] = (unsigned char)(len >> 8);
    h[hn++] = (unsigned char)len;
  } else {
    h[hn++] = 127;
    for (int i = 7; i >= 0; i--) h[hn++] = (unsigned char)((uint64_t)len >> (8 * i));
  }
  buf_add(&b, (const char *)h, hn);
  if (len) buf_add(&b, payload, len);
  int r = write_all(fd, b.data, b.len);
  free(b.data);
  return r;
}

static int ws_close(int fd, int status) {
  char code[2] = {(char)(status >> 8), (char)(status & 0xFF)};
  return ws_send(fd, 8, code, 2);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads exactly N bytes, first from what came with the request, before DEADLINE (now_ms). */
static int ws_read(int fd, struct request *rq, void *dst, size_t n, long long deadline) {
  unsigned char *d = dst;
  while (n) {
    if (rq->early_len) {
      size_t k = rq->early_len < n ? rq->early_len : n;
      memcpy(d, rq->early, k);
      rq->early += k;
      rq->early_len -= k;
      d += k;
      n -= k;
      continue;
    }
    long long left = deadline - now_ms();
    if (left <= 0) return -1;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int ready = poll(&pfd, 1, (int)left);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return -1;
    ssize_t got = read(fd, d, n);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return -1;
    d += got;
    n -= (size_t)got;
  }
  return 0;
}

/* One client frame, unmasked into *PAYLOAD (malloc'd, NUL-ended). Returns its opcode,
 * -1 when nothing complete came before DEADLINE or the client went away, -2 when too large. */
static int ws_read_frame(int fd, struct request *rq, long long deadline, int *masked, char **payload,
                         size_t *len) {
  unsigned char h[2];
  if (ws_read(fd, rq, h, 2, deadline) != 0) return -1;
  *masked = h[1] & 0x80;
  uint64_t n = h[1] & 0x7F;
  if (n >= 126) {
    unsigned char ext[8];
    size_t k = n == 126 ? 2 : 8;
    if (ws_read(fd, rq, ext, k, deadline) != 0) return -1;
    n = 0;
    for (size_t i = 0; i < k; i++) n = n << 8 | ext[i];
  }
  if (n > WS_MAX_PAYLOAD) return -2;
  unsigned char mask[4] = {0};
  if (*masked && ws_read(fd, rq, mask, 4, deadline) != 0) return -1;
  char *p = malloc((size_t)n + 1);
  if (!p) _exit(70);
  if (n && ws_read(fd, rq, p, (size_t)n, deadline) != 0) {
    free(p);
    return -1;
  }
  for (uint64_t i = 0; i < n; i++) p[i] = (char)(p[i] ^ mask[i % 4]);
  p[n] = 0;
  *payload = p;
  *len = (size_t)n;
  return h[0] & 0x0F;
}

/* Handshake, then: the request report as a text frame; one client text frame (masked, as
 * clients must) echoed back; a close frame. All within REQUEST_SECONDS (alarm). */
static void handle_websocket(int fd, struct request *rq) {
  connection_ends = 1; /* after a websocket (or the 400 refusing one), the connection ends */
  if (strcmp(rq->method, "GET") != 0 || !has_token(rq->upgrade, "websocket") ||
      !has_token(rq->connection, "upgrade") || !rq->ws_key[0]) {
    respond(fd, rq, 400, "text/plain", "websocket upgrade expected\n");
    return;
  }
  /* addons/bus/websocket.py open_connection: with workers, the HTTP workers' WSGI environ has
   * no 'socket', so the handshake on http_port raises RuntimeError (500); only the gevent
   * process (gevent_port) upgrades. With workers = 0 the threaded server does it too. */
  if (atoi(conf_or("workers", "0")) > 0 && rq->port == atoi(conf_or("http_port", "8069"))) {
    int gport = atoi(conf_or("gevent_port", conf_or("longpolling_port", "8072")));
    char tb[600];
    snprintf(tb, sizeof tb,
             "Traceback (most recent call last):\n"
             "  File \"/usr/lib/python3/dist-packages/odoo/addons/bus/websocket.py\", line 785, in open_connection\n"
             "    socket = request.httprequest._HTTPRequest__environ['socket']\n"
             "KeyError: 'socket'\n\n"
             "The above exception was the direct cause of the following exception:\n\n"
             "Traceback (most recent call last):\n"
             "RuntimeError: Couldn't bind the websocket. Is the connection opened on the evented port (%d)?\n",
             gport);
    log_line("ERROR", "odoo.http", "Exception during request handling.");
    log_raw(tb);
    respond(fd, rq, 500, "text/html; charset=utf-8", INTERNAL_ERROR_HTML);
    return;
  }
  char accept[29];
  ws_accept(rq->ws_key, accept);
  char head[256];
  int hn = snprintf(head, sizeof head,
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Accept: %s\r\nServer: berth-erp-standin\r\n\r\n",
                    accept);
  int ok = write_all(fd, head, (size_t)hn) == 0;
  log_line("INFO", "werkzeug", "%s - - \"%s %s%s%s HTTP/1.1\" 101 - 0 0.000 0.000", rq->peer, rq->method,
           rq->path, rq->query[0] ? "?" : "", rq->query);
  struct buf b = {0};
  request_json(&b, rq);
  ok = ok && ws_send(fd, 1, b.data, b.len) == 0;
  free(b.data);
  if (!ok) return;

  int masked = 0, status = 1000;
  char *payload = NULL;
  size_t len = 0;
  int opcode = ws_read_frame(fd, rq, now_ms() + WS_WAIT_MS, &masked, &payload, &len);
  if (opcode == -2) status = 1009;               /* message too big */
  else if (opcode >= 0 && !masked) status = 1002; /* protocol error: clients must mask */
  else if (opcode == 1 && ws_send(fd, 1, payload, len) != 0) ok = 0;
  free(payload);
  if (!ok || ws_close(fd, status) != 0) return;
  /* Give the client a moment to answer the close, so the server ends TCP first (RFC 6455
   * 7.1.1) and no unread close frame turns the end into a reset. */
  if (opcode == 8 || opcode == -2) return;
  long long deadline = now_ms() + 2000;
  while (1) {
    payload = NULL;
    opcode = ws_read_frame(fd, rq, deadline, &masked, &payload, &len);
    free(payload);
    if (opcode < 0 || opcode == 8) return;
  }
}

static int websocket_path(const char *p) {
  return strcmp(p, "/websocket") == 0 || strncmp(p, "/websocket/", 11) == 0 || strcmp(p, "/longpolling") == 0 ||
         strncmp(p, "/longpolling/", 13) == 0;
}

static void route(int fd, struct request *rq) {
  int get = strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;
  int post = strcmp(rq->method, "POST") == 0;
  const char *p = rq->path;
  if (strcmp(p, "/web/health") == 0 && get) handle_health(fd, rq);
  else if ((strcmp(p, "/") == 0 || strcmp(p, "/web") == 0 || strcmp(p, "/odoo") == 0 ||
            strcmp(p, "/web/login") == 0) && get) handle_index(fd, rq);
  else if (strcmp(p, "/berth/rows") == 0 && get) handle_rows(fd, rq);
  else if ((strcmp(p, "/berth/rows") == 0 && post) || (strcmp(p, "/berth/add") == 0 && (get || post)))
    handle_add(fd, rq);
  else if (strcmp(p, "/berth/info") == 0 && get) handle_info(fd, rq);
  else if (strcmp(p, "/berth/modules") == 0 && get) handle_modules(fd, rq);
  else if (strcmp(p, "/berth/request") == 0 && get) handle_request_report(fd, rq);
  else if (strcmp(p, "/berth/mail") == 0 && (get || post)) { extern int mail_send(const char *, const char *(*)(const char *), char *, size_t); char out[1024]; int st = mail_send(rq->query, conf_get, out, sizeof out); respond(fd, rq, st, "application/json", out); } /* mail.c */
  else if (websocket_path(p)) handle_websocket(fd, rq);
  else if (strcmp(p, "/web/webclient/version_info") == 0 && (get || post)) handle_version_info(fd, rq);
  else if (strcmp(p, "/web/session/authenticate") == 0 && post) handle_authenticate(fd, rq);
  else if (strcmp(p, "/web/health") == 0 || strncmp(p, "/berth/", 7) == 0)
    respond(fd, rq, 405, "text/plain", "method not allowed\n");
  else respond(fd, rq, 404, "text/html; charset=utf-8", "<!DOCTYPE html><html><body><h1>404: Page not found</h1></body></html>\n");
}

static void on_alarm(int sig) {
  (void)sig;
  _exit(3);
}

/* Waits up to SECONDS for the client's next bytes (or its close). The stop signals, blocked
 * while a request is served, are let in only here: a stopping server finishes the request in
 * flight and awaits no other. Returns 1 when there is something to read. */
static int wait_for_request(int fd, int seconds, const sigset_t *waitmask) {
  long long deadline = now_ms() + seconds * 1000LL;
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  while (!stopping) {
    long long left = deadline - now_ms();
    if (left <= 0) return 0;
    struct timespec ts = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
    int ready = ppoll(&pfd, 1, &ts, waitmask);
    if (ready > 0) return 1;
    if (ready == 0 || errno != EINTR) return 0;
  }
  return 0;
}

/* Reads and answers one request from BUF (LEN bytes already read, more from FD as needed),
 * then leaves in BUF what the client sent after it (pipelined requests). Returns 1 when the
 * connection may carry another request. */
static int serve_request(int fd, struct request *rq, char *buf, size_t *len) {
  char *end = NULL;
  while (1) {
    /* A client may send an empty line before a request (after a POST body, say). */
    size_t blank = 0;
    while (blank + 1 < *len && buf[blank] == '\r' && buf[blank + 1] == '\n') blank += 2;
    if (blank) {
      memmove(buf, buf + blank, *len - blank);
      *len -= blank;
      buf[*len] = 0;
    }
    end = strstr(buf, "\r\n\r\n");
    if (end) break;
    if (*len >= MAX_HEADER) {
      respond(fd, rq, 413, "text/plain", "request header too large\n");
      return 0;
    }
    ssize_t n = read(fd, buf + *len, MAX_HEADER - *len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0; /* closed or timed out before a full request: nothing to answer */
    *len += (size_t)n;
    buf[*len] = 0;
  }
  size_t header_len = (size_t)(end - buf) + 4;

  char target[3072] = "", version[16] = "";
  if (sscanf(buf, "%15s %3071s %15s", rq->method, target, version) < 2) {
    respond(fd, rq, 400, "text/plain", "bad request line\n");
    return 0;
  }
  char *q = strchr(target, '?');
  if (q) {
    *q = 0;
    snprintf(rq->query, sizeof rq->query, "%s", q + 1);
  }
  snprintf(rq->path, sizeof rq->path, "%s", target);

  size_t content_length = 0;
  int expect_continue = 0, chunked = 0;
  for (char *line = strstr(buf, "\r\n") + 2; line < end; line = strstr(line, "\r\n") + 2) {
    if (strncasecmp(line, "Content-Length:", 15) == 0) content_length = strtoul(line + 15, NULL, 10);
    else if (strncasecmp(line, "Expect:", 7) == 0 && strcasestr(line, "100-continue")) expect_continue = 1;
    else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0) chunked = 1;
    /* Each line is at most one of these (header_copy only takes its own name). */
    header_copy(line, "Content-Type", rq->content_type, sizeof rq->content_type, 0);
    header_copy(line, "Host", rq->host, sizeof rq->host, 0);
    header_copy(line, "Upgrade", rq->upgrade, sizeof rq->upgrade, 1);
    header_copy(line, "Connection", rq->connection, sizeof rq->connection, 1);
    header_copy(line, "Sec-WebSocket-Key", rq->ws_key, sizeof rq->ws_key, 0);
    header_copy(line, "Sec-WebSocket-Version", rq->ws_version, sizeof rq->ws_version, 0);
    header_copy(line, "X-Forwarded-Proto", rq->forwarded_proto, sizeof rq->forwarded_proto, 0);
    header_copy(line, "X-Forwarded-For", rq->forwarded_for, sizeof rq->forwarded_for, 1);
    header_copy(line, "X-Forwarded-Host", rq->forwarded_host, sizeof rq->forwarded_host, 0);
  }
  /* HTTP/1.1 is persistent unless asked otherwise, HTTP/1.0 only when asked. A chunked body
   * is not read, so where the next request would start is unknown: close after answering. */
  if (strcmp(version, "HTTP/1.1") == 0) rq->keep_alive = !has_token(rq->connection, "close");
  else if (strcmp(version, "HTTP/1.0") == 0) rq->keep_alive = has_token(rq->connection, "keep-alive");
  if (chunked) rq->keep_alive = 0;
  if (content_length > MAX_BODY) {
    respond(fd, rq, 413, "text/plain", "request body too large\n");
    return 0;
  }
  /* curl sends large bodies only after this (or after waiting a second for it). */
  if (expect_continue && content_length > *len - header_len) write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
  /* Move what came after the headers to the start of the buffer: the body, then maybe more. */
  size_t have = *len - header_len;
  memmove(buf, buf + header_len, have);
  while (have < content_length) {
    ssize_t n = read(fd, buf + have, content_length - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      respond(fd, rq, 408, "text/plain", "request body incomplete\n");
      return 0;
    }
    have += (size_t)n;
  }
  size_t rest = have - content_length;
  char *early = NULL;
  if (rest && websocket_path(rq->path)) {
    early = malloc(rest);
    if (!early) _exit(70);
    memcpy(early, buf + content_length, rest);
    rq->early = early;
    rq->early_len = rest;
  }
  /* The body is handed over NUL-ended; the byte this covers belongs to the next request. */
  char after_body = buf[content_length];
  buf[content_length] = 0;
  rq->body = buf;
  rq->body_len = content_length;
  connection_ends = 0;
  route(fd, rq);
  free(early);
  buf[content_length] = after_body;
  memmove(buf, buf + content_length, rest);
  *len = rest;
  buf[rest] = 0;
  return !connection_ends;
}

static void serve_connection(int fd, const struct sockaddr_in *peer) {
  signal(SIGALRM, on_alarm);
  sigset_t stop_signals, waitmask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigprocmask(SIG_BLOCK, &stop_signals, &waitmask);
  sigdelset(&waitmask, SIGTERM);
  sigdelset(&waitmask, SIGINT);
  char peer_ip[64] = "";
  inet_ntop(AF_INET, &peer->sin_addr, peer_ip, sizeof peer_ip);
  int port = 0;
  struct sockaddr_in local;
  socklen_t local_len = sizeof local;
  if (getsockname(fd, (struct sockaddr *)&local, &local_len) == 0) port = ntohs(local.sin_port);
  /* Bounds each read and write within a request; between requests wait_for_request waits. */
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  /* Headers are read up to MAX_HEADER, a body up to exactly its length, so what is left
   * over after a request (pipelined ones) is always less than MAX_HEADER. */
  char *buf = malloc(MAX_HEADER + MAX_BODY + 1);
  if (!buf) _exit(70);
  size_t len = 0;
  buf[0] = 0;
  for (int served = 0;; served++) {
    /* Bytes already here (pipelined) are a request begun: no idle wait, no stop. */
    if (!len && !wait_for_request(fd, served ? KEEPALIVE_SECONDS : FIRST_REQUEST_SECONDS, &waitmask)) break;
    /* Each request gets its own REQUEST_SECONDS; an idle connection is not counted. */
    alarm(REQUEST_SECONDS);
    struct request rq = {0};
    memcpy(rq.peer, peer_ip, sizeof rq.peer);
    rq.port = port;
    snprintf(rq.method, sizeof rq.method, "-");
    int again = serve_request(fd, &rq, buf, &len);
    alarm(0);
    if (!again) break;
  }
  free(buf);
}

static int listen_on(const char *interface, int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  if (!interface || inet_pton(AF_INET, interface, &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, LISTEN_BACKLOG) != 0) {
    close(s);
    return -1;
  }
  return s;
}

static void on_stop(int sig) {
  (void)sig;
  stopping = 1;
}

/* ---------- odoo neutralize (odoo/cli/neutralize.py, odoo/modules/neutralize.py) ----------
 *
 * `odoo neutralize -d <db> [--stdout]`: Odoo's normal options (the same optparse parser, with
 * the "Neutralize" group adding --stdout), then, on the database named by -d (or db_name):
 *  - no database name: ERROR odoo.cli.neutralize 'Neutralize command needs a database name.
 *    Use "-d" argument', exit 1;
 *  - "Starting <db> database neutralization" (INFO, not with --stdout);
 *  - odoo.sql_db.db_connect(db).cursor(): a failure logs INFO odoo.sql_db "Connection to the
 *    database failed" (ConnectionPool.borrow) and raises;
 *  - get_installed_modules: SELECT name FROM ir_module_module WHERE state IN ('installed',
 *    'to upgrade', 'to remove') (no ORDER BY: the table's order, here by id);
 *  - get_neutralization_queries: each module's data/neutralize.sql, stripped, found in the
 *    add-ons folders as odoo.addons.__path__ orders them (16.0 get_module_resource needs the
 *    module's manifest there; 17.0+ file_open takes the first folder holding the file);
 *  - --stdout: prints "BEGIN;", each query with its trailing ';' stripped then one added, and
 *    "COMMIT;", applying nothing;
 *  - otherwise each query runs in turn (cursor.execute) in the cursor's one transaction,
 *    committed when the `with` block ends: INFO odoo.modules.neutralize "Neutralization
 *    finished", exit 0. A failing statement logs ERROR odoo.sql_db "bad query: <query>\nERROR:
 *    <psycopg2's message>" (sql_db.Cursor.execute), rolls everything back (nothing applied);
 *  - any exception: CRITICAL odoo.cli.neutralize "An error occurred during the neutralization.
 *    THE DATABASE IS NOT NEUTRALIZED!" (no traceback), exit 1.
 * Log lines carry "?" for the database, as no registry sets the thread's dbname. Before
 * running it, the official entrypoint waits for PostgreSQL (wait-for-psql.py, 30 s, then
 * "Database connection failure: <error>" on stderr, exit 1): done here too. */
static const char *INSTALLED_MODULES_SQL =
    "\n        SELECT name\n          FROM ir_module_module\n         WHERE state IN ('installed', 'to upgrade', "
    "'to remove');\n    ";

/* psycopg2's text of an error: PostgreSQL's message without its "ERROR:  " severity. */
static const char *psycopg2_text(PGresult *r) {
  const char *m = PQresultErrorMessage(r);
  if (strncmp(m, "ERROR:  ", 8) == 0) m += 8;
  return m;
}

/* sql_db.Cursor.execute's log line for a failing query. */
static void log_bad_query(const char *query, PGresult *r) {
  char text[1024];
  snprintf(text, sizeof text, "%s", psycopg2_text(r));
  size_t n = strlen(text);
  while (n && text[n - 1] == '\n') text[--n] = 0;
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  size_t size = strlen(query) + n + 256;
  char *line = malloc(size);
  if (!line) _exit(70);
  int len = snprintf(line, size, "%s,%03d %d ERROR ? odoo.sql_db: bad query: %s\nERROR: %s\n", stamp,
                     (int)(tv.tv_usec / 1000), (int)getpid(), query, text);
  if (len > 0 && write(STDERR_FILENO, line, (size_t)len) < 0) { /* nowhere left to report it */ }
  free(line);
}

/* The text of MODULE's data/neutralize.sql (stripped), or NULL when it has none. */
static char *neutralize_query(const char *module) {
  char dirs[MAX_ADDONS_DIRS][512], path[1200];
  int n = addons_dirs(dirs, MAX_ADDONS_DIRS);
  if (!module_name_ok(module)) return NULL;
  for (int i = 0; i < n; i++) {
    if (series_major <= 16) {
      /* get_module_resource -> get_module_path: the first folder with the module's manifest. */
      snprintf(path, sizeof path, "%s/%s/__manifest__.py", dirs[i], module);
      if (!file_exists(path)) continue;
      snprintf(path, sizeof path, "%s/%s/data/neutralize.sql", dirs[i], module);
      if (!file_exists(path)) return NULL;
    } else {
      snprintf(path, sizeof path, "%s/%s/data/neutralize.sql", dirs[i], module);
      if (!file_exists(path)) continue;
    }
    char *text = read_text_file(path, 1 << 20);
    if (!text) return NULL;
    char *t = trim(text);
    memmove(text, t, strlen(t) + 1);
    return text;
  }
  return NULL;
}

static int neutralize_failed(PGconn *c) {
  if (c) {
    if (PQtransactionStatus(c) != PQTRANS_IDLE) PQclear(PQexec(c, "ROLLBACK"));
    PQfinish(c);
  }
  log_line("CRITICAL", "odoo.cli.neutralize", "An error occurred during the neutralization. THE DATABASE IS NOT NEUTRALIZED!");
  return 1;
}

static int command_neutralize_run(int argc, char **argv) {
  command_neutralize = 1;
  struct kv cli[MAX_KV];
  int ncli = 0;
  parse_args(argc, argv, cli, &ncli);
  config_path = getenv("ODOO_RC") && *getenv("ODOO_RC") ? getenv("ODOO_RC") : "/etc/odoo/odoo.conf";
  int to_stdout = 0;
  for (int i = 0; i < ncli; i++) {
    if (strcmp(cli[i].key, "config") == 0) config_path = cli[i].value;
    if (strcmp(cli[i].key, "to_stdout") == 0) to_stdout = 1;
  }
  read_config_file(config_path);
  for (int i = 0; i < ncli; i++)
    if (strcmp(cli[i].key, "config") != 0) conf_set(cli[i].key, cli[i].value);
  apply_db_env_fallbacks();

  char target[256] = "";
  const char *names = conf_get("db_name");
  if (names) {
    snprintf(target, sizeof target, "%s", names);
    target[strcspn(target, ",")] = 0;
    char *t = trim(target);
    memmove(target, t, strlen(t) + 1);
  }
  if (!*target) {
    log_line("ERROR", "odoo.cli.neutralize", "Neutralize command needs a database name. Use \"-d\" argument");
    return 1;
  }

  /* The official entrypoint's wait-for-psql.py, before `odoo neutralize` runs. */
  for (time_t deadline = time(NULL) + 30;;) {
    PGconn *c = db_connect("postgres", 3);
    if (c) {
      PQfinish(c);
      break;
    }
    if (time(NULL) >= deadline) {
      fprintf(stderr, "Database connection failure: %s\n", last_db_error);
      return 1;
    }
    sleep(1);
  }

  if (!to_stdout) log_line("INFO", "odoo.cli.neutralize", "Starting %s database neutralization", target);
  PGconn *c = db_connect(target, 10);
  if (!c) {
    log_line("INFO", "odoo.sql_db", "Connection to the database failed");
    return neutralize_failed(NULL);
  }
  PGresult *r = PQexec(c, "BEGIN");
  PQclear(r);
  r = PQexec(c, INSTALLED_MODULES_SQL);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    log_bad_query(INSTALLED_MODULES_SQL, r);
    PQclear(r);
    return neutralize_failed(c);
  }
  int nmod = PQntuples(r);
  char **queries = calloc((size_t)nmod + 1, sizeof *queries);
  if (!queries) _exit(70);
  int nq = 0;
  for (int i = 0; i < nmod; i++) {
    char *q = neutralize_query(PQgetvalue(r, i, 0));
    if (q && *q) queries[nq++] = q;
    else free(q);
  }
  PQclear(r);
  if (to_stdout) {
    printf("BEGIN;\n");
    for (int i = 0; i < nq; i++) {
      size_t n = strlen(queries[i]);
      while (n && queries[i][n - 1] == ';') queries[i][--n] = 0;
      printf("%s;\n", queries[i]);
    }
    printf("COMMIT;\n");
    fflush(stdout);
    PQclear(PQexec(c, "ROLLBACK"));
    PQfinish(c);
    return 0;
  }
  for (int i = 0; i < nq; i++) {
    r = PQexec(c, queries[i]);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      log_bad_query(queries[i], r);
      PQclear(r);
      return neutralize_failed(c);
    }
    PQclear(r);
  }
  log_line("INFO", "odoo.modules.neutralize", "Neutralization finished");
  r = PQexec(c, "COMMIT");
  if (PQresultStatus(r) != PGRES_COMMAND_OK) {
    log_bad_query("COMMIT", r);
    PQclear(r);
    return neutralize_failed(c);
  }
  PQclear(r);
  PQfinish(c);
  return 0;
}

int main(int argc, char **argv) {
  /* As PID 1 in a container, signals without a handler are ignored: handle them. */
  struct sigaction sa = {0};
  sa.sa_handler = on_stop;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  /* ODOO_VERSION: the version reported and the series behaved as (set per image tag). */
  const char *version = getenv("ODOO_VERSION");
  if (version && *version) {
    snprintf(server_version, sizeof server_version, "%s", version);
    server_version_major = atoi(version);
  }
  series_major = server_version_major < 16 ? 16 : server_version_major > 19 ? 19 : server_version_major;

  /* odoo/cli/command.py main: a first argument not starting with '-' names the command. */
  if (argc > 1 && strcmp(argv[1], "neutralize") == 0) return command_neutralize_run(argc - 2, argv + 2);
  int first = 1;
  if (argc > 1 && strcmp(argv[1], "server") == 0) first = 2;
  else if (argc > 1 && argv[1][0] != '-') {
    fprintf(stderr, "odoo (Berth stand-in): unknown command '%s'; only 'server' and 'neutralize' are supported\n", argv[1]);
    return 2;
  }

  struct kv cli[MAX_KV];
  int ncli = 0;
  parse_args(argc - first, argv + first, cli, &ncli);
  config_path = getenv("ODOO_RC") && *getenv("ODOO_RC") ? getenv("ODOO_RC") : "/etc/odoo/odoo.conf";
  for (int i = 0; i < ncli; i++)
    if (strcmp(cli[i].key, "config") == 0) config_path = cli[i].value;
  if (read_config_file(config_path) != 0)
    log_line("WARNING", "odoo.tools.config", "cannot read config file %s: %s", config_path, strerror(errno));

  /* Demo data for new installs, per series (odoo/tools/config.py of each branch):
   *  - 16.0-18.0: demo unless without_demo is set. On the command line any non-empty value
   *    counts (the string is kept as given, "False" included); in the config file "False",
   *    "false", "None" and an empty value mean unset (config.py load() turns them into
   *    False/None), anything else ("all", "True") means no demo.
   *  - 19.0: no demo unless with_demo. --with-demo sets it, --without-demo[=BOOL] sets it to
   *    not BOOL; in the config file with_demo = <bool>, or the old without_demo = <v>, read
   *    through _check_without_demo (a non-boolean is a warning and means no demo). */
  {
    const char *cli_without = NULL, *cli_with = NULL;
    for (int i = 0; i < ncli; i++) {
      if (strcmp(cli[i].key, "without_demo") == 0) cli_without = cli[i].value;
      if (strcmp(cli[i].key, "with_demo") == 0) cli_with = cli[i].value;
    }
    if (series_major <= 18) {
      want_demo = cli_without ? !*cli_without : !conf_get("without_demo");
    } else if (cli_with) {
      want_demo = strcmp(cli_with, "True") == 0;
    } else {
      want_demo = 0;
      for (int i = 0; i < nconf; i++) {
        if (strcmp(conf[i].key, "without_demo") == 0)
          want_demo = strcmp(without_demo_19("without_demo", conf[i].value), "True") == 0;
        else if (strcmp(conf[i].key, "with_demo") == 0)
          want_demo = python_bool(conf[i].value) == 1;
      }
    }
  }
  for (int i = 0; i < ncli; i++)
    if (strcmp(cli[i].key, "config") != 0) conf_set(cli[i].key, cli[i].value);
  apply_db_env_fallbacks();

  const char *names = conf_get("db_name");
  if (names) {
    char first_name[256];
    snprintf(first_name, sizeof first_name, "%s", names);
    first_name[strcspn(first_name, ",")] = 0;
    snprintf(db_name, sizeof db_name, "%s", trim(first_name));
  }
  if (!db_name[0]) snprintf(db_name, sizeof db_name, "%s", conf_get("db_user"));

  char found[1100];
  if (find_in_addons("VERSION", found, sizeof found)) {
    char *v = read_small_file(found);
    if (v) {
      snprintf(addons_version, sizeof addons_version, "%s", v);
      addons_version_set = 1;
    }
  }

  /* odoo/cli/server.py report_configuration: "Odoo version %s", the config file, the database. */
  log_line("INFO", "odoo", "Odoo version %s", server_version);
  log_line("INFO", "odoo", "Using configuration file at %s", config_path);
  log_line("INFO", "odoo", "addons version: %s", addons_version_set ? addons_version : "(none)");
  log_line("INFO", "odoo", "database: %s@%s:%s", conf_get("db_user"), conf_get("db_host"), conf_get("db_port"));

  /* The database manager's master password: whether it is set, never its value. */
  if (conf_get("admin_passwd")) log_line("INFO", "odoo.tools.config", "admin_passwd is set (database manager master password)");
  else log_line("WARNING", "odoo.tools.config", "admin_passwd is not set: the database manager accepts Odoo's default master password");

  if (find_in_addons("BERTH_FAIL_START", found, sizeof found)) {
    log_line("CRITICAL", "odoo.service.server", "Failed to initialize database `%s`: %s asks to fail", db_name,
             found);
    return 1;
  }
  const char *delay = getenv("BERTH_START_DELAY");
  if (delay && atoi(delay) > 0) sleep((unsigned)atoi(delay));

  /* The official entrypoint gives PostgreSQL 30 s, then gives up. */
  if (wait_for_postgres(30) != 0) {
    log_line("ERROR", "odoo.sql_db", "Database connection failure: PostgreSQL not reachable within 30 s");
    return 1;
  }
  if (stopping) return 0;
  int created = 0, loaded = LOAD_FATAL;
  if (ensure_database(&created) != 0 || (loaded = load_modules(created)) == LOAD_FATAL) {
    log_line("CRITICAL", "odoo.service.server", "Failed to initialize database `%s`.", db_name);
    return 1;
  }
  if (loaded == LOAD_FAILED) {
    /* odoo/service/server.py preload_registries: CRITICAL with the traceback (exc_info), rc
     * -1; without --stop-after-init the server serves anyway (odoo.service.server.start). */
    log_line("CRITICAL", "odoo.service.server", "Failed to initialize database `%s`.", db_name);
    log_raw(module_traceback);
  }
  if (loaded != LOAD_NOT_INITIALIZED) write_filestore_marker();
  if (conf_get("stop_after_init")) {
    /* ThreadedServer/PreforkServer.run with stop: self.stop(), return rc; odoo/cli/server.py
     * sys.exit(rc): -1 is exit code 255. An uninitialised database is not a failure (0). */
    extern int tests_report(const char *, void (*)(const char *, const char *, const char *, ...)); int tests_rc = loaded == LOAD_FAILED || !conf_get("test_enable") ? 0 : tests_report(db_name, log_line); /* tests.c */
    log_line("INFO", "odoo.service.server", "Initiating shutdown");
    log_line("INFO", "odoo.service.server", "Hit CTRL-C again or send a second signal to force the shutdown.");
    return loaded == LOAD_FAILED ? 255 : tests_rc;
  }

  int fds[2], nfds = 0;
  int port = atoi(conf_or("http_port", "8069"));
  const char *interface = conf_get("http_interface");
  fds[nfds] = listen_on(interface, port);
  if (fds[nfds] < 0) {
    log_line("CRITICAL", "odoo.service.server", "cannot listen on port %d: %s", port, strerror(errno));
    return 1;
  }
  nfds++;
  log_line("INFO", "odoo.service.server", "HTTP service (werkzeug) running on %s:%d", interface ? interface : "0.0.0.0",
           port);
  /* With workers, real Odoo also serves websockets on gevent_port: routing tests need it there. */
  if (atoi(conf_or("workers", "0")) > 0) {
    int gport = atoi(conf_or("gevent_port", conf_or("longpolling_port", "8072")));
    fds[nfds] = listen_on(interface, gport);
    if (fds[nfds] >= 0) {
      nfds++;
      log_line("INFO", "odoo.service.server", "Evented Service (websocket) running on %s:%d",
               interface ? interface : "0.0.0.0", gport);
    }
  }

  /* Children are tracked so that a stopping server can tell each to finish. */
  static pid_t child_pids[MAX_CHILDREN];
  int children = 0;
  while (!stopping) {
    pid_t done;
    /* At the cap, block until a child ends (a stop signal interrupts the wait): no spinning,
     * and new connections wait in the listen backlog meanwhile. */
    while ((done = waitpid(-1, NULL, children >= MAX_CHILDREN ? 0 : WNOHANG)) > 0 ||
           (done < 0 && errno == EINTR && !stopping)) {
      for (int i = 0; done > 0 && i < children; i++)
        if (child_pids[i] == done) {
          child_pids[i] = child_pids[--children];
          break;
        }
    }
    if (children >= MAX_CHILDREN) continue;
    struct pollfd pfd[2];
    for (int i = 0; i < nfds; i++) pfd[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    int ready = poll(pfd, (nfds_t)nfds, 500);
    if (ready <= 0) continue;
    for (int i = 0; i < nfds && children < MAX_CHILDREN; i++) {
      if (!(pfd[i].revents & POLLIN)) continue;
      struct sockaddr_in peer;
      socklen_t plen = sizeof peer;
      int c = accept4(fds[i], (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);
      if (c < 0) {
        /* Out of descriptors or memory: the listener stays readable, so pause, not spin. */
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) usleep(100000);
        continue;
      }
      pid_t pid = fork();
      if (pid == 0) {
        for (int j = 0; j < nfds; j++) close(fds[j]);
        /* SIGTERM/SIGINT keep on_stop: serve_connection lets them in between requests only. */
        serve_connection(c, &peer);
        shutdown(c, SHUT_WR);
        close(c);
        _exit(0);
      }
      if (pid > 0) child_pids[children++] = pid;
      else usleep(100000); /* fork failed: the client is dropped, try again later */
      close(c);
    }
  }
  log_line("INFO", "odoo.service.server", "Initiating shutdown");
  for (int i = 0; i < nfds; i++) close(fds[i]);
  /* Idle keep-alive connections end now; requests in flight finish (within REQUEST_SECONDS). */
  for (int i = 0; i < children; i++) kill(child_pids[i], SIGTERM);
  time_t deadline = time(NULL) + 3;
  while (children > 0 && time(NULL) < deadline) {
    if (waitpid(-1, NULL, WNOHANG) > 0) children--;
    else usleep(20000);
  }
  return 0;
}
