/* test_tune_records.c: tuning records (src/driver/tune_records.c) and
 * schedule knobs (te_knob_value): a written record reads back; the best
 * record is the error-free one of least median cost; malformed lines of
 * every kind are counted and skipped with the first one's line number;
 * another target's lines are counted, never kept; knobs return their
 * default, record their space, apply a config, and refuse a value they do
 * not offer. */
#include "check.h"
#include "driver/tune_records.h"

static const char *T = "llvm -mcpu=znver5";

static driver_record make(unsigned char k, int64_t reg_n, int error, double cost) {
    driver_record r;
    memset(&r, 0, sizeof r);
    r.target = T;
    memset(r.key, k, 32);
    r.cfg.n = 2;
    snprintf(r.cfg.name[0], TE_KNOB_NAME, "conv.reg_n");
    r.cfg.v[0] = reg_n;
    snprintf(r.cfg.name[1], TE_KNOB_NAME, "conv.ocb");
    r.cfg.v[1] = 2;
    r.error = error;
    r.cost = cost;
    return r;
}

static void test_roundtrip(void) {
    driver_records *R = driver_records_new();
    kstr s;
    kstr_init(&s);
    double costs[3] = {3e-4, 1e-4, 2e-4};
    driver_record a = make(0xab, 7, REC_OK, 0), b = make(0xab, 4, REC_OK, 0),
                  c = make(0xab, 9, REC_WRONG_ANSWER, 0), d = make(0xcd, 1, REC_OK, 0);
    driver_record_write(&s, &a, "nn.conv2d+\"q\"", "1x4x56x56x16", costs, 3, 0.2, 1e9);
    double cb[3] = {5e-5, 9e-5, 9e-5}; /* median 9e-5: better than a's 2e-4 */
    driver_record_write(&s, &b, "nn.conv2d", "", cb, 3, 0.2, 1e9);
    double cc[1] = {1e-9}; /* cheapest, but a wrong answer */
    driver_record_write(&s, &c, "nn.conv2d", "", cc, 1, 0.2, 1e9);
    driver_record_write(&s, &d, "nn.dense", "", costs, 3, 0.2, 1e9);
    /* each line parses back, kept */
    int lineno = 0;
    for (char *p = s.buf; *p;) {
        char *e = strchr(p, '\n');
        CHECK(e != NULL);
        if (!e)
            break;
        CHECK_EQ_INT(driver_records_add_line(R, p, (size_t)(e - p), T, ++lineno), 1);
        p = e + 1;
    }
    CHECK_EQ_INT(R->n, 4);
    CHECK_EQ_INT(R->bad, 0);
    CHECK_NEAR(R->r[0].cost, 2e-4, 1e-12); /* the median of three */
    CHECK_EQ_INT(R->r[2].error, REC_WRONG_ANSWER);
    const driver_record *best = driver_records_best(R, a.key, NULL);
    CHECK(best != NULL);
    if (best) {
        CHECK_EQ_INT(te_config_get(&best->cfg, "conv.reg_n", -1), 4);
        CHECK_EQ_INT(te_config_get(&best->cfg, "conv.ocb", -1), 2);
    }
    CHECK(driver_records_has(R, a.key, &c.cfg));
    CHECK(!driver_records_has(R, d.key, &a.cfg));
    unsigned char none[32] = {0};
    CHECK(driver_records_best(R, none, NULL) == NULL);
    /* the same config with its knobs in another order is the same */
    te_config swapped = a.cfg;
    swapped.v[0] = a.cfg.v[1];
    swapped.v[1] = a.cfg.v[0];
    snprintf(swapped.name[0], TE_KNOB_NAME, "%s", a.cfg.name[1]);
    snprintf(swapped.name[1], TE_KNOB_NAME, "%s", a.cfg.name[0]);
    CHECK(driver_config_equal(&swapped, &a.cfg));
    kstr_free(&s);
    driver_records_free(R);
}

static void test_bad_lines(void) {
    driver_records *R = driver_records_new();
    char hex[65];
    unsigned char key[32];
    memset(key, 0x11, 32);
    driver_key_hex(key, hex);
    char good[512], other[512];
    snprintf(good, sizeof good,
             "{\"input\": [\"%s\", \"%s\", {}], \"config\": {\"dense.mr\": 4}, \"result\": "
             "[[1e-4], 0, 0.1, 5]}",
             T, hex);
    snprintf(other, sizeof other,
             "{\"input\": [\"llvm -mcpu=znver3\", \"%s\", {}], \"config\": {}, \"result\": "
             "[[1e-4], 0, 0.1, 5]}",
             hex);
    const char *bad[] = {
        "not json",
        "{\"input\": [",
        "[]",
        "{\"input\": [1, 2], \"config\": {}, \"result\": [[1e-4], 0]}",          /* target */
        "{\"input\": [\"t\", \"zz\"], \"config\": {}, \"result\": [[1e-4], 0]}", /* key */
        "{\"input\": [\"t\", \"00\"], \"config\": {}, \"result\": [[1e-4], 0]}", /* short key */
    };
    int lineno = 0;
    CHECK_EQ_INT(driver_records_add_line(R, "", 0, T, ++lineno), 0); /* blank: nothing */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ_INT(driver_records_add_line(R, bad[i], strlen(bad[i]), T, ++lineno), -1);
    /* wrong types in an otherwise good line */
    const char *mutations[][2] = {
        {"\"dense.mr\": 4", "\"dense.mr\": 4.5"}, {"\"dense.mr\": 4", "\"dense.mr\": \"4\""},
        {"[[1e-4], 0,", "[[-1e-4], 0,"},          {"[[1e-4], 0,", "[[], 0,"},
        {"[[1e-4], 0,", "[[1e-4], \"0\","},       {"[[1e-4], 0,", "[1e-4, 0,"}};
    for (size_t i = 0; i < sizeof mutations / sizeof mutations[0]; i++) {
        char line[600];
        const char *at = strstr(good, mutations[i][0]);
        CHECK(at != NULL);
        if (!at)
            continue;
        snprintf(line, sizeof line, "%.*s%s%s", (int)(at - good), good, mutations[i][1],
                 at + strlen(mutations[i][0]));
        CHECK_EQ_INT(driver_records_add_line(R, line, strlen(line), T, ++lineno), -1);
    }
    CHECK_EQ_INT(driver_records_add_line(R, other, strlen(other), T, ++lineno), 0);
    CHECK_EQ_INT(driver_records_add_line(R, good, strlen(good), T, ++lineno), 1);
    CHECK_EQ_INT(R->n, 1);
    CHECK_EQ_INT(R->bad, 12);
    CHECK_EQ_INT(R->first_bad, 2);
    CHECK_EQ_INT(R->other_target, 1);
    /* a failed measurement needs no time */
    char failed[512];
    snprintf(failed, sizeof failed,
             "{\"input\": [\"%s\", \"%s\", {}], \"config\": {}, \"result\": [[], 7, 0, 5]}", T,
             hex);
    CHECK_EQ_INT(driver_records_add_line(R, failed, strlen(failed), T, ++lineno), 1);
    CHECK_EQ_INT(R->r[1].error, REC_RUN_TIMEOUT);
    driver_records_free(R);
    /* a missing file: an error, or with missing_ok an empty set */
    CHECK(driver_records_load("/nonexistent/records.json", T, 0) == NULL);
    CHECK_CONTAINS(kiln_last_error(), "cannot read the tuning records");
    driver_records *E = driver_records_load("/nonexistent/records.json", T, 1);
    CHECK(E && E->n == 0);
    driver_records_free(E);
}

static void test_knobs(void) {
    int64_t c[4] = {1, 2, 4, 8};
    /* no knobs: the default */
    CHECK_EQ_INT(te_knob_value(NULL, "a", 4, 4, c), 4);
    /* recording: the space, default first; a knob asked twice once */
    te_space sp;
    memset(&sp, 0, sizeof sp);
    te_knobs rec = {&sp, NULL, 0};
    CHECK_EQ_INT(te_knob_value(&rec, "a", 4, 4, c), 4);
    CHECK_EQ_INT(te_knob_value(&rec, "a", 4, 4, c), 4);
    CHECK_EQ_INT(te_knob_value(&rec, "b", 1, 2, c), 1);
    CHECK_EQ_INT(sp.n, 2);
    CHECK_EQ_STR(sp.k[0].name, "a");
    CHECK_EQ_INT(sp.k[0].n, 4);
    CHECK_EQ_INT(sp.k[0].cand[0], 4);
    CHECK_EQ_INT(sp.k[1].n, 2);
    /* applying: the config's value; a value not offered is the default and
       marks the config invalid; a knob the config lacks is its default */
    te_config cfg = {2, {"a", "b"}, {8, 3}};
    te_knobs ap = {NULL, &cfg, 0};
    CHECK_EQ_INT(te_knob_value(&ap, "a", 4, 4, c), 8);
    CHECK_EQ_INT(ap.invalid, 0);
    CHECK_EQ_INT(te_knob_value(&ap, "b", 1, 4, c), 1);
    CHECK_EQ_INT(ap.invalid, 1);
    CHECK_EQ_INT(te_knob_value(&ap, "c", 2, 4, c), 2);
}

/* A config measured several times is judged by the median of all its
 * lines, not its luckiest; one that failed once is never the best. */
static void test_best_by_median(void) {
    driver_records *R = driver_records_new();
    struct {
        int64_t reg_n;
        int error;
        double cost;
    } lines[] = {
        {7, REC_OK, 1e-4},       /* lucky once */
        {4, REC_OK, 2e-4},       /* steady */
        {9, REC_OK, 5e-5},       /* fastest, then it hung */
        {7, REC_OK, 3e-4},       /* measured again, in turn */
        {4, REC_OK, 2.1e-4},     /* with the others */
        {9, REC_RUN_TIMEOUT, 0}, /* never trusted again */
        {7, REC_OK, 3e-4},       /* 7's median: 3e-4 */
        {4, REC_OK, 1.9e-4},     /* 4's median: 2e-4 */
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        driver_record r = make(0x5a, lines[i].reg_n, lines[i].error, lines[i].cost);
        CHECK_EQ_INT(driver_records_add(R, &r), KILN_OK);
    }
    driver_record probe = make(0x5a, 7, REC_OK, 0);
    CHECK_NEAR(driver_records_config_cost(R, probe.key, &probe.cfg, NULL), 3e-4, 1e-12);
    int nlines = 0;
    probe = make(0x5a, 4, REC_OK, 0);
    CHECK_NEAR(driver_records_config_cost(R, probe.key, &probe.cfg, &nlines), 2e-4, 1e-12);
    CHECK_EQ_INT(nlines, 3);
    probe = make(0x5a, 9, REC_OK, 0);
    CHECK(driver_records_config_cost(R, probe.key, &probe.cfg, NULL) < 0);
    probe = make(0x5a, 1, REC_OK, 0);
    CHECK(driver_records_config_cost(R, probe.key, &probe.cfg, &nlines) < 0); /* never measured */
    CHECK_EQ_INT(nlines, 0);
    double cost = 0;
    const driver_record *best = driver_records_best(R, probe.key, &cost);
    CHECK(best != NULL);
    if (best)
        CHECK_EQ_INT(te_config_get(&best->cfg, "conv.reg_n", -1), 4);
    CHECK_NEAR(cost, 2e-4, 1e-12);
    driver_records_free(R);
}

TEST_MAIN(TEST(test_roundtrip), TEST(test_bad_lines), TEST(test_knobs), TEST(test_best_by_median))
