/* tune_records.h: tuning records (docs/tuning.md), one JSON object per
 * line, close to AutoTVM's log format:
 *
 *   {"input": [TARGET, TASK_KEY, {"ops": OPS, "shape": OUT_SHAPE}],
 *    "config": {"conv.reg_n": 7, ...},
 *    "result": [[COST_S, ...], ERROR_NO, BUILD_S, UNIX_TIME],
 *    "version": 1, "kiln": VERSION}
 *
 * TASK_KEY is the hex of the fused group's key (kernel_key.c). The tuner
 * appends lines as it measures; `kiln compile --tuning-records` reads the
 * best error-free line per task for its target. A line that does not
 * parse, or holds the wrong types, is skipped and counted; so is a record
 * for another target. */
#ifndef KILN_TUNE_RECORDS_H
#define KILN_TUNE_RECORDS_H

#include "../base/base_internal.h"
#include "../te/te_internal.h"

/* AutoTVM's MeasureErrorNo values, those kiln uses */
enum {
    REC_OK = 0,
    REC_INVALID_CONFIG = 1, /* the schedule refused the config's values together */
    REC_COMPILE_ERROR = 2,
    REC_RUNTIME_ERROR = 4, /* the candidate crashed or its kernel failed */
    REC_WRONG_ANSWER = 5,  /* its outputs differ from the default kernel's */
    REC_RUN_TIMEOUT = 7
};

typedef struct {
    const char *target;
    unsigned char key[32];
    te_config cfg;
    double cost; /* seconds a call: the median of the costs (REC_OK) */
    int error;
} driver_record;

typedef struct {
    arena *ar;
    int n, cap;
    driver_record *r; /* the lines for the target, in file order */
    int bad;          /* lines skipped as malformed */
    int first_bad;    /* the first one's line number, or 0 */
    int other_target; /* lines for other targets, ignored */
} driver_records;

/* Read `path` (missing_ok: a missing file is an empty set) keeping the
 * lines for `target`; NULL with an error when the file cannot be read. */
KILN_HIDDEN driver_records *driver_records_load(const char *path, const char *target,
                                                int missing_ok);
KILN_HIDDEN driver_records *driver_records_new(void);
KILN_HIDDEN void driver_records_free(driver_records *R);
/* Add one line of text for `target` to R: 1 if kept, 0 if for another
 * target, -1 if malformed (counted in R). */
KILN_HIDDEN int driver_records_add_line(driver_records *R, const char *line, size_t len,
                                        const char *target, int lineno);
/* Add a record (copied) to R. */
KILN_HIDDEN kiln_status driver_records_add(driver_records *R, const driver_record *rec);
/* The cost of config c of `key` over all its lines: the median of their
 * costs; -1 if it has none, or if any of them is a failure (a config that
 * crashed, hung or gave a wrong answer once is not trusted again). A
 * config measured several times (the tuner measures its best candidates
 * again, in turn with the default) is judged by all its measurements, not
 * by its luckiest one. *lines (if given): its error-free lines. */
KILN_HIDDEN double driver_records_config_cost(const driver_records *R, const unsigned char key[32],
                                              const te_config *c, int *lines);
/* A record of the config of least driver_records_config_cost for `key`
 * (*cost, if given: that cost), or NULL if no config has one. */
KILN_HIDDEN const driver_record *driver_records_best(const driver_records *R,
                                                     const unsigned char key[32], double *cost);
/* 1 if R has a record (any outcome) for key with exactly config c. */
KILN_HIDDEN int driver_records_has(const driver_records *R, const unsigned char key[32],
                                   const te_config *c);
/* 1 if a and b give every knob the same value. */
KILN_HIDDEN int driver_config_equal(const te_config *a, const te_config *b);
/* The cost of a measurement: the median of its n costs (the rounds of a
 * noisy machine err high, rarely low), 0 for none. */
KILN_HIDDEN double driver_cost_median(const double *costs, int n);
/* The target a record names: t's string, and for a native target (its
 * CPU "native": whatever machine builds) also which machine this is,
 * " -host=" and 16 hex digits of the hash of the CPU's identity (vendor,
 * signature, features, caches), so that records measured on one CPU are
 * never used on another. */
KILN_HIDDEN void driver_records_target(const kiln_target *t, char *out, size_t cap);
/* One record line (with its newline) into out. */
KILN_HIDDEN void driver_record_write(kstr *out, const driver_record *rec, const char *ops,
                                     const char *shape, const double *costs, int ncosts,
                                     double build_s, double unix_time);
/* The 64 hex digits of key into hex (65 bytes); key from 64 hex digits
 * (1 on success). */
KILN_HIDDEN void driver_key_hex(const unsigned char key[32], char hex[65]);
KILN_HIDDEN int driver_key_parse(const char *hex, unsigned char key[32]);

#endif
