/*
 * Request bodies in, response bodies out, with the wire behaviour of Zeus's FastAPI/pydantic v1
 * server: loose coercion ("64" -> 64, 1.7 -> 1, true -> 1.0), unknown fields ignored, and 422
 * errors as {"detail": [{"loc": [...], "msg": ..., "type": ..., "ctx": {...}}]}.
 */
#ifndef BSO_SERVER_CODEC_H
#define BSO_SERVER_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/report.h"
#include "core/spec.h"
#include "store/store.h"
#include "server/jbuf.h"

/* One entry of a 422 detail list: loc is [where, field] or [where, field, index] or
 * [where, index] (a JSON syntax error at that character), or just [where]. */
struct bso_detail {
    const char *where; /* "body" or "query" */
    char field[48];    /* "" for none */
    int64_t index;     /* -1 for none */
    const char *type;
    char msg[1024];
    bool has_limit;
    int64_t limit;
};

#define BSO_MAX_DETAILS 32
/* Arrays and objects nested deeper than this are refused before parsing (no request needs more
 * than 2). */
#define BSO_MAX_JSON_DEPTH 16

struct bso_details {
    size_t n;
    struct bso_detail d[BSO_MAX_DETAILS];
};

/* Adds one detail entry. */
void bso_details_add(struct bso_details *ds, const char *where, const char *field, int64_t index,
                     const char *type, const char *msg);
/* Writes {"detail":[...]}. */
void bso_encode_details(struct jbuf *b, const struct bso_details *ds);

/* POST /jobs: decodes, coerces and validates a JobSpecFromClient. 0, or BSO_EINVAL with *ds. */
int bso_decode_spec(const char *body, size_t len, struct bso_job_spec *spec,
                    struct bso_details *ds);
/* The registered spec as Zeus echoes it (every field, Zeus's order). */
void bso_encode_spec(struct jbuf *b, const struct bso_job_spec *spec);
/* The fields where a sent spec differs from the registered one, as the array
 * [{"field", "registered", "sent"}] (values as bso_encode_spec writes them). */
void bso_encode_spec_diff(struct jbuf *b, const struct bso_job_spec *registered,
                          const struct bso_job_spec *sent);

/* POST /report and PATCH /trials bodies. */
struct bso_report_req {
    char job_id[BSO_JOB_ID_MAX + 1];
    int64_t batch_size;
    int64_t trial_number;
    struct bso_report report; /* unused for PATCH /trials */
    char energy_source[16];   /* report.energy_source points here when given */
};

int bso_decode_report(const char *body, size_t len, struct bso_report_req *req,
                      struct bso_details *ds);
int bso_decode_trial_id(const char *body, size_t len, struct bso_report_req *req,
                        struct bso_details *ds);

/* POST /jobs/ID/profile: {"device": str?, "batch_sizes": [{"batch_size", "feasible",
 * "samples_per_s"?, "joules_per_sample"?, "peak_memory_bytes"?, "device"?}, ...]}. At most
 * BSO_MAX_BATCH_SIZES entries, into e (that many); *n gets the count. Measurements must be
 * finite and non-negative. 0, or BSO_EINVAL with *ds. */
int bso_decode_profile(const char *body, size_t len, struct bso_profile_entry *e, size_t *n,
                       struct bso_details *ds);

/* POST /jobs/ID/power: {"batch_size", "power_limit"?, "device"?, "measurements":
 * [{"power_limit", "samples_per_s", "power"}, ...]} (1 to BSO_POWER_MAX_LIMITS, limits
 * distinct). A power_limit left out or null is NAN: the server chooses. 0, or BSO_EINVAL with
 * *ds. */
int bso_decode_power(const char *body, size_t len, struct bso_power_profile *p,
                     struct bso_details *ds);

/* POST /jobs/ID/transfer: {"from": "<job id>"}, the id into from (cap bytes). 0, or BSO_EINVAL
 * with *ds. */
int bso_decode_transfer(const char *body, size_t len, char *from, size_t cap,
                        struct bso_details *ds);

/* Writes the keys "samples", "mean_batch_size" (the run's last progress point) and "progress"
 * (every point, with "batch_size": the mean per step since the point before) into the object
 * being built in b, from a trial's stored points (struct bso_trial_row's progress; NULL: none,
 * and null, null, []). */
void bso_encode_progress(struct jbuf *b, const char *stored);

#endif
