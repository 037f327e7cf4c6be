/* check.h: the unit-test harness. CHECK(expr) and CHECK_EQ_INT/STR print the
 * failing expression with its values and count the failure; TEST_MAIN runs
 * the test functions and prints "N passed, M failed". */
#ifndef KILN_CHECK_H
#define KILN_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_checks, g_failed_checks;

#define CHECK(e)                                                                                   \
    do {                                                                                           \
        g_checks++;                                                                                \
        if (!(e)) {                                                                                \
            g_failed_checks++;                                                                     \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #e);                  \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        g_checks++;                                                                                \
        if (va_ != vb_) {                                                                          \
            g_failed_checks++;                                                                     \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, #b,  \
                    va_, vb_);                                                                     \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
    do {                                                                                           \
        const char *sa_ = (a), *sb_ = (b);                                                         \
        g_checks++;                                                                                \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0) {                                               \
            g_failed_checks++;                                                                     \
            fprintf(stderr, "%s:%d: %s == %s failed:\n--- got\n%s\n--- expected\n%s\n", __FILE__,  \
                    __LINE__, #a, #b, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");                 \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double va_ = (double)(a), vb_ = (double)(b);                                               \
        g_checks++;                                                                                \
        if (!(fabs(va_ - vb_) <= (tol))) {                                                         \
            g_failed_checks++;                                                                     \
            fprintf(stderr, "%s:%d: |%s - %s| <= %g failed: %.9g vs %.9g\n", __FILE__, __LINE__,   \
                    #a, #b, (double)(tol), va_, vb_);                                              \
        }                                                                                          \
    } while (0)

/* CHECK that s contains sub. */
#define CHECK_CONTAINS(s, sub)                                                                     \
    do {                                                                                           \
        const char *ss_ = (s);                                                                     \
        g_checks++;                                                                                \
        if (!ss_ || !strstr(ss_, (sub))) {                                                         \
            g_failed_checks++;                                                                     \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, __LINE__,         \
                    ss_ ? ss_ : "(null)", (sub));                                                  \
        }                                                                                          \
    } while (0)

typedef struct {
    const char *name;
    void (*fn)(void);
} test_case;

static inline int test_run_all(const test_case *tests, int n) {
    int passed = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        int before = g_failed_checks;
        tests[i].fn();
        if (g_failed_checks == before) {
            passed++;
        } else {
            failed++;
            fprintf(stderr, "FAILED: %s\n", tests[i].name);
        }
    }
    printf("%d passed, %d failed (%d checks)\n", passed, failed, g_checks);
    return failed ? 1 : 0;
}

#define TEST(f)                                                                                    \
    { #f, f }
#define TEST_MAIN(...)                                                                             \
    int main(void) {                                                                               \
        static const test_case tests_[] = {__VA_ARGS__};                                           \
        return test_run_all(tests_, (int)(sizeof tests_ / sizeof tests_[0]));                      \
    }

/* A scratch path under the test binary folder: KILN_TEST_TMP/name. */
static inline const char *test_tmp_path(const char *name) {
    static char buf[4][1024];
    static int k;
    const char *d = getenv("KILN_TEST_TMP");
    char *b = buf[k++ & 3];
    snprintf(b, 1024, "%s/%s", d ? d : "/tmp", name);
    return b;
}

#endif
