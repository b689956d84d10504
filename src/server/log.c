/* Line-at-a-time logging; see log.h. */
#include "server/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "bso/error.h"

static enum bso_log_level min_level = BSO_LOG_INFO;
static enum bso_log_format log_format = BSO_LOG_TEXT;
static int log_fd = 2;

static const char *const names[] = {"debug", "info", "warn", "error"};
static const char *const upper[] = {"DEBUG", "INFO", "WARN", "ERROR"};

void bso_log_setup(enum bso_log_level level, enum bso_log_format format, int fd)
{
    min_level = level;
    log_format = format;
    log_fd = fd;
}

int bso_log_parse_level(const char *name, enum bso_log_level *out)
{
    static const struct {
        const char *name;
        enum bso_log_level level;
    } table[] = {
        {"debug", BSO_LOG_DEBUG},    {"notset", BSO_LOG_DEBUG}, {"info", BSO_LOG_INFO},
        {"warn", BSO_LOG_WARN},      {"warning", BSO_LOG_WARN}, {"error", BSO_LOG_ERROR},
        {"critical", BSO_LOG_ERROR},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        if (strcasecmp(name, table[i].name) == 0) {
            *out = table[i].level;
            return 0;
        }
    }
    return BSO_EINVAL;
}

/* Appends s to buf as the inside of a JSON string. */
static size_t json_escape(char *buf, size_t o, size_t cap, const char *s)
{
    for (; *s && o + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(buf + o, cap - o, "\\u%04x", c);
        } else {
            buf[o++] = (char)c;
        }
    }
    return o;
}

static _Thread_local const char *request;

void bso_log_set_request(const char *id)
{
    request = id;
}

const char *bso_log_request(void)
{
    return request;
}

void bso_log(enum bso_log_level level, const char *fmt, ...)
{
    if (level < min_level)
        return;
    char msg[2048], line[4608], ts[40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t t = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + t, sizeof ts - t, ".%03ldZ", now.tv_nsec / 1000000);

    size_t o;
    if (log_format == BSO_LOG_JSON) {
        o = (size_t)snprintf(line, sizeof line, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"", ts,
                             names[level]);
        o = json_escape(line, o, sizeof line - 80, msg);
        if (request) /* ids are [A-Za-z0-9._-]: no escaping needed */
            o += (size_t)snprintf(line + o, sizeof line - o, "\",\"request_id\":\"%s", request);
        o += (size_t)snprintf(line + o, sizeof line - o, "\"}\n");
    } else {
        o = (size_t)snprintf(line, sizeof line, "%s %s %s%s%s%s\n", ts, upper[level], msg,
                             request ? " [request " : "", request ? request : "",
                             request ? "]" : "");
        if (o >= sizeof line)
            o = sizeof line - 1;
    }
    ssize_t unused = write(log_fd, line, o);
    (void)unused;
}
