/*
 * Logging: one line per call, written with a single write(2) so lines from several threads never
 * interleave. Text ("2026-11-22T03:27:00.123Z INFO message") or JSON lines
 * ({"ts":...,"level":"info","msg":...}).
 */
#ifndef BSO_SERVER_LOG_H
#define BSO_SERVER_LOG_H

enum bso_log_level { BSO_LOG_DEBUG, BSO_LOG_INFO, BSO_LOG_WARN, BSO_LOG_ERROR };
enum bso_log_format { BSO_LOG_TEXT, BSO_LOG_JSON };

void bso_log_setup(enum bso_log_level level, enum bso_log_format format, int fd);
/* Parses a level name: debug, info, warn/warning, error, and Zeus's NOTSET/CRITICAL; any case.
 * 0 or BSO_EINVAL. */
int bso_log_parse_level(const char *name, enum bso_log_level *out);

/* The request this thread is answering (X-Request-Id), added to its log lines and answers;
 * NULL: none. */
void bso_log_set_request(const char *id);
const char *bso_log_request(void);

void bso_log(enum bso_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) bso_log(BSO_LOG_DEBUG, __VA_ARGS__)
#define log_info(...) bso_log(BSO_LOG_INFO, __VA_ARGS__)
#define log_warn(...) bso_log(BSO_LOG_WARN, __VA_ARGS__)
#define log_error(...) bso_log(BSO_LOG_ERROR, __VA_ARGS__)

#endif
