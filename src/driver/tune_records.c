/* tune_records.c: reading and writing tuning records (tune_records.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "../base/sha256.h"
#include "../target/target.h"
#include "tune_records.h"

void driver_key_hex(const unsigned char key[32], char hex[65]) {
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", key[i]);
}

int driver_key_parse(const char *hex, unsigned char key[32]) {
    if (!hex || strlen(hex) != 64)
        return 0;
    for (int i = 0; i < 32; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            int d = kiln_hex_digit(hex[2 * i + k]);
            if (d < 0)
                return 0;
            v = v * 16 + (unsigned)d;
        }
        key[i] = (unsigned char)v;
    }
    return 1;
}

driver_records *driver_records_new(void) {
    driver_records *R = kiln_calloc(1, sizeof *R);
    if (R && !(R->ar = arena_new())) {
        free(R);
        return NULL;
    }
    return R;
}

void driver_records_free(driver_records *R) {
    if (!R)
        return;
    arena_free(R->ar);
    free(R->r);
    free(R);
}

kiln_status driver_records_add(driver_records *R, const driver_record *rec) {
    if (R->n == R->cap) {
        int ncap = R->cap ? R->cap * 2 : 64;
        driver_record *nr = kiln_realloc(R->r, sizeof *nr * (size_t)ncap);
        if (!nr)
            return KILN_ERR_NOMEM;
        R->r = nr;
        R->cap = ncap;
    }
    R->r[R->n] = *rec;
    R->r[R->n].target = arena_strdup(R->ar, rec->target ? rec->target : "");
    R->n++;
    return KILN_OK;
}

static double number(const json *v, int *ok) {
    if (json_is(v, JSON_INT) || json_is(v, JSON_DOUBLE))
        return v->d;
    *ok = 0;
    return 0;
}

int driver_records_add_line(driver_records *R, const char *line, size_t len, const char *target,
                            int lineno) {
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r'))
        k++;
    if (k == len)
        return 0; /* a blank line: nothing */
    arena *a = arena_new();
    int ok = a != NULL, kept = 0;
    kiln_clear_error();
    const json *v = ok ? json_parse(a, line, len, "record") : NULL;
    const json *in = json_get(v, "input"), *cfg = json_get(v, "config"),
               *res = json_get(v, "result");
    driver_record rec;
    memset(&rec, 0, sizeof rec);
    const char *tg = json_str(json_at(in, 0));
    ok = tg && driver_key_parse(json_str(json_at(in, 1)), rec.key) && json_is(cfg, JSON_OBJECT) &&
         json_is(res, JSON_ARRAY) && json_len(res) >= 2 && json_is(json_at(res, 0), JSON_ARRAY) &&
         json_len(cfg) <= TE_KNOB_MAX;
    for (int i = 0; ok && i < json_len(cfg); i++) {
        int64_t x;
        ok =
            json_int(json_at(cfg, i), &x) && strlen(cfg->keys[i]) < TE_KNOB_NAME && cfg->keys[i][0];
        if (ok) {
            snprintf(rec.cfg.name[rec.cfg.n], TE_KNOB_NAME, "%s", cfg->keys[i]);
            rec.cfg.v[rec.cfg.n++] = x;
        }
    }
    int64_t err = 0;
    ok = ok && json_int(json_at(res, 1), &err) && err >= 0 && err < 100;
    const json *costs = json_at(res, 0);
    double c[64];
    int nc = json_len(costs);
    ok = ok && nc <= 64;
    for (int i = 0; ok && i < nc; i++) {
        c[i] = number(json_at(costs, i), &ok);
        ok = ok && c[i] >= 0;
    }
    if (ok && err == REC_OK && nc < 1)
        ok = 0; /* success needs a time */
    if (ok) {
        rec.error = (int)err;
        rec.cost = err == REC_OK ? driver_cost_median(c, nc) : -1;
        rec.target = tg;
        if (strcmp(tg, target)) {
            R->other_target++;
        } else {
            kept = driver_records_add(R, &rec) == KILN_OK ? 1 : 0;
            ok = kept;
        }
    }
    if (!ok) {
        R->bad++;
        if (!R->first_bad)
            R->first_bad = lineno;
        kept = -1;
    }
    arena_free(a);
    kiln_clear_error();
    return kept;
}

driver_records *driver_records_load(const char *path, const char *target, int missing_ok) {
    FILE *f = fopen(path, "rb");
    if (!f && missing_ok && errno == ENOENT)
        return driver_records_new();
    if (!f) {
        kiln_set_error(KILN_ERR_IO, "%s: cannot read the tuning records: %s", path,
                       strerror(errno));
        return NULL;
    }
    driver_records *R = driver_records_new();
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    while (R) {
        /* getline: lines of any length */
        ssize_t len = getline(&line, &cap, f);
        if (len < 0)
            break;
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        driver_records_add_line(R, line, (size_t)len, target, lineno);
    }
    free(line);
    fclose(f);
    return R;
}

double driver_cost_median(const double *costs, int n) {
    double c[64];
    n = n < 64 ? n : 64;
    for (int i = 0; i < n; i++) { /* insertion sort: a few values */
        int j = i;
        while (j > 0 && c[j - 1] > costs[i]) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = costs[i];
    }
    return n < 1 ? 0 : n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
}

int driver_config_equal(const te_config *a, const te_config *b) {
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++) {
        int found = 0;
        for (int j = 0; j < b->n && !found; j++)
            found = !strcmp(a->name[i], b->name[j]) && a->v[i] == b->v[j];
        if (!found)
            return 0;
    }
    return 1;
}

double driver_records_config_cost(const driver_records *R, const unsigned char key[32],
                                  const te_config *c, int *lines) {
    double costs[64];
    int n = 0;
    if (lines)
        *lines = 0;
    for (int i = 0; R && i < R->n; i++) {
        const driver_record *r = &R->r[i];
        if (memcmp(r->key, key, 32) || !driver_config_equal(&r->cfg, c))
            continue;
        if (r->error != REC_OK)
            return -1; /* it failed once: not to be trusted */
        if (n < 64)
            costs[n++] = r->cost;
        if (lines)
            ++*lines;
    }
    return n ? driver_cost_median(costs, n) : -1;
}

const driver_record *driver_records_best(const driver_records *R, const unsigned char key[32],
                                         double *cost) {
    const driver_record *best = NULL;
    double bc = 0;
    for (int i = 0; R && i < R->n; i++) {
        const driver_record *r = &R->r[i];
        if (r->error != REC_OK || memcmp(r->key, key, 32))
            continue;
        int seen = 0; /* the config judged at its first line already */
        for (int j = 0; j < i && !seen; j++)
            seen = R->r[j].error == REC_OK && !memcmp(R->r[j].key, key, 32) &&
                   driver_config_equal(&R->r[j].cfg, &r->cfg);
        double c = seen ? -1 : driver_records_config_cost(R, key, &r->cfg, NULL);
        if (c > 0 && (!best || c < bc)) {
            best = r;
            bc = c;
        }
    }
    if (cost)
        *cost = best ? bc : 0;
    return best;
}

int driver_records_has(const driver_records *R, const unsigned char key[32], const te_config *c) {
    for (int i = 0; R && i < R->n; i++)
        if (!memcmp(R->r[i].key, key, 32) && driver_config_equal(&R->r[i].cfg, c))
            return 1;
    return 0;
}

void driver_record_write(kstr *out, const driver_record *rec, const char *ops, const char *shape,
                         const double *costs, int ncosts, double build_s, double unix_time) {
    char hex[65];
    driver_key_hex(rec->key, hex);
    kstr_puts(out, "{\"input\": [");
    json_write_string(out, rec->target);
    kstr_printf(out, ", \"%s\", {\"ops\": ", hex);
    json_write_string(out, ops ? ops : "");
    kstr_puts(out, ", \"shape\": ");
    json_write_string(out, shape ? shape : "");
    kstr_puts(out, "}], \"config\": {");
    for (int i = 0; i < rec->cfg.n; i++) {
        kstr_puts(out, i ? ", " : "");
        json_write_string(out, rec->cfg.name[i]);
        kstr_printf(out, ": %lld", (long long)rec->cfg.v[i]);
    }
    kstr_puts(out, "}, \"result\": [[");
    for (int i = 0; i < ncosts; i++)
        kstr_printf(out, "%s%.9g", i ? ", " : "", costs[i]);
    kstr_printf(out, "], %d, %.3f, %.0f], \"version\": 1}\n", rec->error, build_s, unix_time);
}

void driver_records_target(const kiln_target *t, char *out, size_t cap) {
    int len = snprintf(out, cap, "%s", kiln_target_str(t));
    if (strcmp(kiln_target_cpu(t), "native") || len < 0 || (size_t)len >= cap)
        return;
    char id[1024], hex[KILN_SHA256_HEX];
    target_host_cpu_id(id, sizeof id);
    kiln_sha256_hex(id, strlen(id), hex);
    snprintf(out + len, cap - (size_t)len, " -host=%.16s", hex);
}
