/* bso-server settings; see config.h. Adding a setting is adding a row to `options`. */
#include "server/config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bso/error.h"
#include "core/spec.h"
#include "server/dotenv.h"

typedef int (*setter_fn)(struct bso_config *cfg, const char *value, char *why, size_t cap);

/* How a setting's text becomes its field: most settings are a plain field of one kind; the
 * rest have a setter of their own. */
enum kind { K_STRING, K_INT, K_BOOL, K_CUSTOM };

struct option {
    const char *flag;     /* --database */
    const char *env;      /* BSO_DATABASE_URL */
    const char *zeus_env; /* ZEUS_BSO_DATABASE_URL, or NULL */
    const char *arg;      /* URL; NULL for a switch, which takes no value on the command line */
    const char *help;
    enum kind kind;
    size_t offset; /* of the field in struct bso_config */
    size_t size;   /* K_STRING: the field's size */
    long min, max; /* K_INT: the allowed range */
    setter_fn set; /* K_CUSTOM */
};

#define FIELD(f) offsetof(struct bso_config, f)
#define STRING(f) K_STRING, FIELD(f), sizeof(((struct bso_config *)0)->f), 0, 0, NULL
#define INT(f, lo, hi) K_INT, FIELD(f), 0, (lo), (hi), NULL
#define SWITCH(f) K_BOOL, FIELD(f), 0, 0, 0, NULL
#define CUSTOM(fn) K_CUSTOM, 0, 0, 0, 0, (fn)

static int set_string(char *dst, size_t cap, const char *v, char *why, size_t wcap)
{
    if (strlen(v) >= cap) {
        snprintf(why, wcap, "too long");
        return BSO_EINVAL;
    }
    snprintf(dst, cap, "%s", v);
    return 0;
}

static int set_int(int *dst, const char *v, long min, long max, char *why, size_t cap)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno || n < min || n > max) {
        snprintf(why, cap, "expected an integer from %ld to %ld", min, max);
        return BSO_EINVAL;
    }
    *dst = (int)n;
    return 0;
}

static int set_threads(struct bso_config *c, const char *v, char *why, size_t cap)
{
    c->threads_set = true;
    return set_int(&c->threads, v, 1, 1024, why, cap);
}

/* A switch: on the command line it takes no value; in the environment 1/true/yes or
 * 0/false/no. */
static int set_bool(bool *dst, const char *v, char *why, size_t cap)
{
    if (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0) {
        *dst = true;
    } else if (strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0) {
        *dst = false;
    } else {
        snprintf(why, cap, "expected 1/true/yes or 0/false/no");
        return BSO_EINVAL;
    }
    return 0;
}

static int set_max_body(struct bso_config *c, const char *v, char *why, size_t cap)
{
    int kib;
    int rc = set_int(&kib, v, 1, 1 << 20, why, cap);
    if (rc == 0)
        c->max_body = (size_t)kib * 1024;
    return rc;
}

static int set_log_level(struct bso_config *c, const char *v, char *why, size_t cap)
{
    if (bso_log_parse_level(v, &c->log_level) == 0)
        return 0;
    snprintf(why, cap, "expected debug, info, warn or error");
    return BSO_EINVAL;
}

static int set_log_format(struct bso_config *c, const char *v, char *why, size_t cap)
{
    if (strcasecmp(v, "text") == 0 || strcasecmp(v, "json") == 0) {
        c->log_format = strcasecmp(v, "json") == 0 ? BSO_LOG_JSON : BSO_LOG_TEXT;
        return 0;
    }
    snprintf(why, cap, "expected text or json");
    return BSO_EINVAL;
}

static int set_durability(struct bso_config *c, const char *v, char *why, size_t cap)
{
    if (strcasecmp(v, "normal") == 0 || strcasecmp(v, "full") == 0) {
        c->durability = strcasecmp(v, "full") == 0 ? BSO_DURABILITY_FULL : BSO_DURABILITY_NORMAL;
        return 0;
    }
    snprintf(why, cap, "expected normal or full");
    return BSO_EINVAL;
}

static int set_default_policy(struct bso_config *c, const char *v, char *why, size_t cap)
{
    if ((c->default_policy = bso_policy_parse(v)) >= 0)
        return 0;
    snprintf(why, cap, "expected bso or zeus");
    return BSO_EINVAL;
}

static const struct option options[] = {
    {"--database", "BSO_DATABASE_URL", "ZEUS_BSO_DATABASE_URL", "URL",
     "database URL: sqlite:///relative.db, sqlite:////absolute.db or sqlite:///:memory: "
     "(default sqlite:///bso.db)",
     STRING(database)},
    {"--host", "BSO_HOST", NULL, "ADDR", "address to listen on (default 127.0.0.1)", STRING(host)},
    {"--port", "BSO_PORT", NULL, "N", "port to listen on; 0 picks a free one (default 8000)",
     INT(port, 0, 65535)},
    {"--log-level", "BSO_LOG_LEVEL", "ZEUS_BSO_LOG_LEVEL", "LEVEL",
     "debug, info, warn or error (default info)", CUSTOM(set_log_level)},
    {"--log-format", "BSO_LOG_FORMAT", NULL, "FMT", "text or json lines (default text)",
     CUSTOM(set_log_format)},
    {"--threads", "BSO_THREADS", NULL, "N",
     "worker threads (default: the number of CPUs, four times that on PostgreSQL; with "
     "--durability full every connection has its own)",
     CUSTOM(set_threads)},
    {"--durability", "BSO_DURABILITY", NULL, "MODE",
     "normal (WAL, survives a crash) or full (fsync per commit, survives power loss); "
     "default normal",
     CUSTOM(set_durability)},
    {"--default-policy", "BSO_DEFAULT_POLICY", NULL, "NAME",
     "policy of jobs registered without a \"policy\" field: bso, or zeus for Zeus's exact "
     "decisions (default bso)",
     CUSTOM(set_default_policy)},
    {"--max-body-kib", "BSO_MAX_BODY_KIB", NULL, "N", "largest request body in KiB (default 1024)",
     CUSTOM(set_max_body)},
    {"--max-connections", "BSO_MAX_CONNECTIONS", NULL, "N",
     "simultaneous connections (default 1024)", INT(max_connections, 1, 1000000)},
    {"--max-connections-per-client", "BSO_MAX_CONNECTIONS_PER_CLIENT", NULL, "N",
     "simultaneous connections from one IP address; 0: no limit (default 256; behind a "
     "proxy every client has the proxy's address)",
     INT(max_per_client, 0, 1000000)},
    {"--db-connections", "BSO_DB_CONNECTIONS", NULL, "N",
     "database connections the worker threads share; 0: one each (default 0). Fewer "
     "connections keep their page caches warm at the price of waiting for one",
     INT(db_connections, 0, 4096)},
    {"--cache-mb", "BSO_CACHE_MB", NULL, "N",
     "memory in MiB for the jobs kept in memory, so reads skip the database (SQLite, "
     "--durability normal); 0: none (default 4)",
     INT(cache_mb, 0, 1 << 20)},
    {"--timeout", "BSO_TIMEOUT", NULL, "SECONDS", "idle connection timeout (default 60)",
     INT(timeout_s, 1, 86400)},
    {"--request-timeout", "BSO_REQUEST_TIMEOUT", NULL, "SECONDS",
     "time a request may take to arrive, from its first line to the end of its body; a slower "
     "one gets 408 and the connection closes (default 30)",
     INT(request_timeout_s, 1, 86400)},
    {"--lease-floor", "BSO_LEASE_FLOOR", NULL, "SECONDS",
     "a dispatched trial without its final report fails after its lease: three times the "
     "job's longest finished run, never less than this (default 3600)",
     INT(lease_floor_s, 1, 365 * 86400)},
    {"--lease-default", "BSO_LEASE_DEFAULT", NULL, "SECONDS",
     "the lease while none of the job's runs has finished (default 86400)",
     INT(lease_default_s, 1, 365 * 86400)},
    {"--tls-cert", "BSO_TLS_CERT", NULL, "PEM",
     "serve HTTPS with this certificate (chain) file; needs --tls-key", STRING(tls_cert)},
    {"--tls-key", "BSO_TLS_KEY", NULL, "PEM", "the certificate's private key file (unencrypted)",
     STRING(tls_key)},
    {"--insecure-no-auth", "BSO_INSECURE_NO_AUTH", NULL, NULL,
     "serve without API tokens, every client an admin, even on a public address (Zeus's "
     "clients cannot send tokens); off by default",
     SWITCH(insecure_no_auth)},
};
#define N_OPTIONS (sizeof options / sizeof *options)

const char *bso_config_usage(void)
{
    static char text[8192];
    if (text[0])
        return text;
    size_t o = (size_t)snprintf(
        text, sizeof text,
        "usage: bso-server [serve] [OPTIONS]\n"
        "       bso-server migrate [--sql] [OPTIONS]\n"
        "       bso-server token create --tenant NAME [--admin] [OPTIONS]\n"
        "       bso-server token list [--tenant NAME] [OPTIONS]\n"
        "       bso-server token revoke ID | --tenant NAME [OPTIONS]\n"
        "       bso-server import-zeus --from URL [--jobs PREFIX] [--dry-run] [--replace]\n"
        "                              [OPTIONS]\n"
        "\n"
        "The BSO server: learns the best batch size of recurring training jobs and speaks the\n"
        "API of Zeus's batch size optimizer. `migrate` creates or upgrades the database schema\n"
        "and exits (serve does this too on start); `migrate --sql` prints the SQL instead.\n"
        "`token` manages API tokens in the database (a running server sees changes within a\n"
        "second): `create` prints a new token once, `revoke` takes its ID or a whole tenant.\n"
        "`import-zeus` copies the jobs of a Zeus BSO server's database (--from, as Zeus's\n"
        "ZEUS_BSO_DATABASE_URL: sqlite:///PATH or postgresql://...) into --database, to go on\n"
        "under the zeus policy exactly as Zeus would; --dry-run only says what it would do.\n"
        "\n"
        "Options (flag, then environment variable; flags win over the environment, which wins\n"
        "over a .env file in the working directory):\n");
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char left[64];
        if (o >= sizeof text)
            break;
        snprintf(left, sizeof left, "%s %s", options[i].flag, options[i].arg ? options[i].arg : "");
        o += (size_t)snprintf(text + o, sizeof text - o, "  %-24s %s\n  %-24s   [%s%s%s]\n", left,
                              options[i].help, "", options[i].env, options[i].zeus_env ? ", " : "",
                              options[i].zeus_env ? options[i].zeus_env : "");
    }
    if (o < sizeof text)
        snprintf(text + o, sizeof text - o,
                 "  --help                   this text\n"
                 "  --version                the version\n");
    return text;
}

static int apply(struct bso_config *cfg, const struct option *opt, const char *value,
                 const char *source, char *err, size_t errcap)
{
    char why[128];
    void *field = (char *)cfg + opt->offset;
    int rc;
    switch (opt->kind) {
    case K_STRING:
        rc = set_string(field, opt->size, value, why, sizeof why);
        break;
    case K_INT:
        rc = set_int(field, value, opt->min, opt->max, why, sizeof why);
        break;
    case K_BOOL:
        rc = set_bool(field, value, why, sizeof why);
        break;
    default:
        rc = opt->set(cfg, value, why, sizeof why);
        break;
    }
    if (rc == 0)
        return 0;
    snprintf(err, errcap, "%s: invalid value '%s' for %s: %s", source, value, opt->flag, why);
    return BSO_EINVAL;
}

/* The arguments of `bso-server token`: --tenant NAME, --admin, and revoke's ID. 1 when
 * argv[*i] was one (*i moved past it), 0 when it is not, BSO_EINVAL when it is bad. */
static int token_argument(struct bso_config *cfg, int argc, char **argv, int *i, char *err,
                          size_t errcap)
{
    const char *a = argv[*i];
    if (strcmp(a, "--admin") == 0) {
        cfg->token_admin = true;
        return 1;
    }
    if (strcmp(a, "--tenant") == 0 || strncmp(a, "--tenant=", 9) == 0) {
        const char *v = a[8] == '=' ? a + 9 : (*i + 1 < argc ? argv[++*i] : NULL);
        if (!v || !bso_tenant_name_valid(v)) {
            snprintf(err, errcap,
                     "--tenant needs a name of 1 to %d letters, digits, '.', '_' or '-'",
                     BSO_TENANT_MAX);
            return BSO_EINVAL;
        }
        snprintf(cfg->token_tenant, sizeof cfg->token_tenant, "%s", v);
        return 1;
    }
    if (a[0] >= '0' && a[0] <= '9' && strcmp(cfg->token_action, "revoke") == 0) {
        char *end;
        const long long id = strtoll(a, &end, 10);
        if (*end != '\0' || id <= 0) {
            snprintf(err, errcap, "token revoke: '%s' is not a token ID", a);
            return BSO_EINVAL;
        }
        cfg->token_id = id;
        return 1;
    }
    return 0;
}

/* The arguments of `bso-server import-zeus`: --from URL, --jobs PREFIX, --dry-run, --replace.
 * 1 when argv[*i] was one (*i moved past it), 0 when it is not, BSO_EINVAL when it is bad. */
static int import_argument(struct bso_config *cfg, int argc, char **argv, int *i, char *err,
                           size_t errcap)
{
    const char *a = argv[*i];
    if (strcmp(a, "--dry-run") == 0) {
        cfg->import_dry_run = true;
        return 1;
    }
    if (strcmp(a, "--replace") == 0) {
        cfg->import_replace = true;
        return 1;
    }
    static const struct {
        const char *flag;
        size_t offset, size;
    } valued[] = {
        {"--from", offsetof(struct bso_config, import_from), sizeof cfg->import_from},
        {"--jobs", offsetof(struct bso_config, import_prefix), sizeof cfg->import_prefix},
    };
    for (size_t k = 0; k < sizeof valued / sizeof *valued; k++) {
        const size_t n = strlen(valued[k].flag);
        if (strncmp(a, valued[k].flag, n) != 0 || (a[n] != '\0' && a[n] != '='))
            continue;
        const char *v = a[n] == '=' ? a + n + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
        if (!v || !v[0] || strlen(v) >= valued[k].size) {
            snprintf(err, errcap, "%s needs a value of 1 to %zu characters", valued[k].flag,
                     valued[k].size - 1);
            return BSO_EINVAL;
        }
        memcpy((char *)cfg + valued[k].offset, v, strlen(v) + 1);
        return 1;
    }
    return 0;
}

int bso_config_load(struct bso_config *cfg, int argc, char **argv, const char *dotenv_path,
                    char *err, size_t errcap)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->database, sizeof cfg->database, "sqlite:///bso.db");
    snprintf(cfg->host, sizeof cfg->host, "127.0.0.1");
    cfg->port = 8000;
    cfg->default_policy = BSO_POLICY_BSO;
    cfg->db_connections = 0;
    cfg->log_level = BSO_LOG_INFO;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->threads = cpus > 0 ? (int)cpus : 2;
    cfg->max_body = 1024 * 1024;
    cfg->max_connections = 1024;
    cfg->timeout_s = 60;
    cfg->request_timeout_s = 30;
    cfg->lease_floor_s = 3600;
    cfg->lease_default_s = 86400;
    cfg->max_per_client = 256;
    cfg->cache_mb = 4;

    struct bso_dotenv env;
    const char *path = dotenv_path ? dotenv_path : ".env";
    int rc = bso_dotenv_load(path, &env, err, errcap);
    if (rc < 0)
        return BSO_EINVAL;
    /* Lowest first: Zeus's names from .env, ours from .env, Zeus's from the environment, ours. */
    for (size_t i = 0; i < N_OPTIONS && rc == 0; i++) {
        const struct option *o = &options[i];
        const char *v;
        if (o->zeus_env && (v = bso_dotenv_get(&env, o->zeus_env)))
            rc = apply(cfg, o, v, path, err, errcap);
        if (rc == 0 && (v = bso_dotenv_get(&env, o->env)))
            rc = apply(cfg, o, v, path, err, errcap);
        if (rc == 0 && o->zeus_env && (v = getenv(o->zeus_env)))
            rc = apply(cfg, o, v, o->zeus_env, err, errcap);
        if (rc == 0 && (v = getenv(o->env)))
            rc = apply(cfg, o, v, o->env, err, errcap);
    }
    bso_dotenv_free(&env);
    if (rc < 0)
        return rc;

    int i = 1;
    if (i < argc && strcmp(argv[i], "serve") == 0) {
        i++;
    } else if (i < argc && strcmp(argv[i], "migrate") == 0) {
        cfg->command = BSO_CMD_MIGRATE;
        i++;
    } else if (i < argc && strcmp(argv[i], "token") == 0) {
        cfg->command = BSO_CMD_TOKEN;
        if (++i >= argc || (strcmp(argv[i], "create") != 0 && strcmp(argv[i], "list") != 0 &&
                            strcmp(argv[i], "revoke") != 0)) {
            snprintf(err, errcap, "token: expected create, list or revoke (see --help)");
            return BSO_EINVAL;
        }
        snprintf(cfg->token_action, sizeof cfg->token_action, "%s", argv[i++]);
    } else if (i < argc && strcmp(argv[i], "import-zeus") == 0) {
        cfg->command = BSO_CMD_IMPORT_ZEUS;
        i++;
    }
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cfg->command = BSO_CMD_HELP;
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            cfg->command = BSO_CMD_VERSION;
            return 0;
        }
        if (strcmp(a, "--sql") == 0 && cfg->command == BSO_CMD_MIGRATE) {
            cfg->migrate_sql = true;
            continue;
        }
        if (cfg->command == BSO_CMD_IMPORT_ZEUS) {
            rc = import_argument(cfg, argc, argv, &i, err, errcap);
            if (rc < 0)
                return rc;
            if (rc == 1)
                continue;
        }
        if (cfg->command == BSO_CMD_TOKEN) {
            rc = token_argument(cfg, argc, argv, &i, err, errcap);
            if (rc < 0)
                return rc;
            if (rc == 1)
                continue;
        }
        const struct option *o = NULL;
        const char *value = NULL;
        for (size_t k = 0; k < N_OPTIONS && !o; k++) {
            size_t n = strlen(options[k].flag);
            if (strncmp(a, options[k].flag, n) == 0 && (a[n] == '\0' || a[n] == '=')) {
                o = &options[k];
                value = a[n] == '=' ? a + n + 1 : NULL;
            }
        }
        if (!o) {
            snprintf(err, errcap, "unknown argument '%s' (see --help)", a);
            return BSO_EINVAL;
        }
        if (!value && !o->arg) {
            value = "1";
        } else if (!value) {
            if (i + 1 >= argc) {
                snprintf(err, errcap, "%s needs a value", a);
                return BSO_EINVAL;
            }
            value = argv[++i];
        }
        if ((rc = apply(cfg, o, value, "command line", err, errcap)) < 0)
            return rc;
    }
    if ((cfg->tls_cert[0] != '\0') != (cfg->tls_key[0] != '\0')) {
        snprintf(err, errcap, "--tls-cert and --tls-key go together");
        return BSO_EINVAL;
    }
    if (cfg->command == BSO_CMD_IMPORT_ZEUS && !cfg->import_from[0]) {
        snprintf(err, errcap, "import-zeus needs --from URL (the Zeus database)");
        return BSO_EINVAL;
    }
    if (cfg->command == BSO_CMD_TOKEN) {
        const bool create = strcmp(cfg->token_action, "create") == 0;
        const bool revoke = strcmp(cfg->token_action, "revoke") == 0;
        if (create && !cfg->token_tenant[0]) {
            snprintf(err, errcap, "token create needs --tenant NAME");
            return BSO_EINVAL;
        }
        if (revoke && (cfg->token_id > 0) == (cfg->token_tenant[0] != '\0')) {
            snprintf(err, errcap, "token revoke needs a token ID or --tenant NAME (one of them)");
            return BSO_EINVAL;
        }
        if (cfg->token_admin && !create) {
            snprintf(err, errcap, "--admin goes with token create");
            return BSO_EINVAL;
        }
    }
    /* A PostgreSQL server's threads mostly wait for the database's answers: more of them. */
    if (!cfg->threads_set && strncmp(cfg->database, "postgres", 8) == 0)
        cfg->threads *= 4;
    return 0;
}
