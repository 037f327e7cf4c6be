/* kiln_profile.c: `kiln run --profile` and `--profile-trace`. Times each
 * kernel over the runs, then prints them slowest first with their place on
 * this machine's roofline (docs/PROFILING.md): the FLOPs and bytes the
 * compiler counted (mod.json), the GFLOP/s and GB/s reached, the
 * arithmetic intensity, the roofline limit at it, the share of that limit
 * reached and the limit that binds. The limits come from
 * kiln_machine_limits_get (measured once per CPU, thread count and vector
 * width, then cached). The trace has one Chrome trace event per kernel per
 * run, with the same figures as its args. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_run.h"

#define NODE_W 24
#define FUNC_W 20

static void trace_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* s in at most w columns: a long one keeps a third of its head and the
 * rest of its tail (where node and kernel names differ) around '~'. */
static const char *fit(char *buf, const char *s, int w) {
    int n = (int)strlen(s ? s : "");
    if (n <= w)
        snprintf(buf, (size_t)w + 1, "%s", s ? s : "");
    else
        snprintf(buf, (size_t)w + 1, "%.*s~%s", (w - 1) / 3, s, s + n - (w - 1 - (w - 1) / 3));
    return buf;
}

/* A figure in a few columns: "-" where unknown (negative). */
static const char *num(char *buf, size_t cap, double v) {
    if (v < 0)
        snprintf(buf, cap, "-");
    else if (v == 0)
        snprintf(buf, cap, "0");
    else if (v >= 999.5)
        snprintf(buf, cap, "%.0f", v);
    else if (v >= 99.95)
        snprintf(buf, cap, "%.1f", v);
    else if (v >= 0.9995)
        snprintf(buf, cap, "%.2f", v);
    else if (v >= 0.01)
        snprintf(buf, cap, "%.3f", v);
    else
        snprintf(buf, cap, "%.1e", v);
    return buf;
}

static const char *bound_name(kiln_bound b) {
    return b == KILN_BOUND_COMPUTE ? "compute" : b == KILN_BOUND_MEMORY ? "memory" : "-";
}

static void print_row(const char *node, const char *func, const kiln_roofline *r, double pct) {
    char a[NODE_W + 1], b[FUNC_W + 1], c[10][32];
    if (func && !strncmp(func, "fused_", 6)) /* every kernel the compiler names */
        func += 6;
    printf("%-*s %-*s %8s %5s %7s %6s %7s %6s %5s %6s %5s %s\n", NODE_W, fit(a, node, NODE_W),
           FUNC_W, fit(b, func, FUNC_W), num(c[0], 32, r->seconds * 1e6), num(c[1], 32, pct),
           num(c[2], 32, r->flops >= 0 ? r->flops / 1e9 : -1),
           num(c[3], 32, r->bytes >= 0 ? r->bytes / 1e6 : -1), num(c[4], 32, r->gflops),
           num(c[5], 32, r->gbs), num(c[6], 32, r->intensity), num(c[7], 32, r->limit_gflops),
           num(c[8], 32, r->share >= 0 ? 100 * r->share : -1), bound_name(r->bound));
}

typedef struct {
    int kernel;
    double total, flops, bytes;
} kernel_time;

static int cmp_kernel_time(const void *a, const void *b) {
    const kernel_time *x = a, *y = b;
    return (x->total < y->total) - (x->total > y->total); /* descending */
}

static void print_machine(const kiln_machine_limits *lim, int ok, int vector_bits) {
    if (!ok) {
        printf("Machine: the limits could not be measured (%s); no roofline\n", kiln_last_error());
        return;
    }
    printf("Machine: %s, %d thread%s: FP32 FMA peak %.1f GFLOP/s at %d lanes%s, memory "
           "bandwidth %.1f GB/s\n",
           lim->cpu, lim->threads, lim->threads == 1 ? "" : "s", lim->peak_gflops, lim->lanes,
           vector_bits ? " (the package's width)" : "", lim->bandwidth_gbs);
    if (lim->cached)
        printf("  (measured by kiln on this CPU earlier, read from %s)\n", lim->source);
    else
        printf("  (measured now%s%s)\n", lim->source[0] ? ", saved to " : "", lim->source);
}

static void print_profile(const kiln_executor *e, kernel_time *kt, int nk, long long runs,
                          long long top, const kiln_machine_limits *lim) {
    double total = 0, flops = 0, bytes = 0, roof_time = 0, tc = 0, tm = 0;
    int unknown = 0;
    for (int k = 0; k < nk; k++) {
        total += kt[k].total / (double)runs;
        flops += kt[k].flops;
        bytes += kt[k].bytes;
        unknown |= kt[k].flops < 0 || kt[k].bytes < 0;
    }
    qsort(kt, (size_t)nk, sizeof *kt, cmp_kernel_time);
    int rows = top > 0 && top < nk ? (int)top : nk;
    printf("Kernel profile (mean over %lld runs):\n", runs);
    printf("%-*s %-*s %8s %5s %7s %6s %7s %6s %5s %6s %5s %s\n", NODE_W, "Node", FUNC_W, "Function",
           "Time(us)", "%Time", "GFLOP", "MB", "GFLOP/s", "GB/s", "AI", "Roof", "%Roof", "Bound");
    for (int k = 0; k < nk; k++) {
        kiln_roofline r;
        kiln_roofline_point(kt[k].total / (double)runs, kt[k].flops, kt[k].bytes, lim, &r);
        if (r.bound != KILN_BOUND_UNKNOWN) {
            double c = r.flops / (lim->peak_gflops * 1e9), m = r.bytes / (lim->bandwidth_gbs * 1e9);
            roof_time += c > m ? c : m;
            tc += c;
            tm += m;
        }
        if (k < rows)
            print_row(kiln_executor_kernel_name(e, kt[k].kernel),
                      kiln_executor_kernel_func(e, kt[k].kernel), &r,
                      total > 0 ? 100 * r.seconds / total : 0);
    }
    if (rows < nk)
        printf("(%d more kernels)\n", nk - rows);
    /* the whole run: its counts, and the share of the time the roofline
       allows each kernel, summed, over the time taken */
    kiln_roofline t;
    kiln_roofline_point(total, unknown ? -1 : flops, unknown ? -1 : bytes, lim, &t);
    if (t.bound != KILN_BOUND_UNKNOWN) {
        t.share = total > 0 ? roof_time / total : -1;
        t.limit_gflops = roof_time > 0 ? flops / roof_time / 1e9 : -1;
        t.bound = tc >= tm ? KILN_BOUND_COMPUTE : KILN_BOUND_MEMORY;
    }
    print_row("Total", "", &t, 100.0);
    printf("AI: FLOP per byte. Roof: min(peak, AI x bandwidth), GFLOP/s. %%Roof: the time the "
           "roofline allows\nover the time taken. Bound: the limit that binds. "
           "\"-\": not counted (docs/PROFILING.md).\n");
    if (unknown)
        printf("Some kernels have no FLOP or byte count (a package from an older kiln, or a "
               "count it could not express): their figures are \"-\", and so are the total's.\n");
}

static void trace_num(FILE *f, const char *key, double v) {
    if (v < 0)
        fprintf(f, ", \"%s\": null", key);
    else
        fprintf(f, ", \"%s\": %.6g", key, v);
}

static void trace_event(FILE *f, const kiln_executor *e, int k, long long r, double t,
                        const kiln_roofline *p, int first) {
    fprintf(f, "%s\n{\"name\": ", first ? "" : ",");
    trace_string(f, kiln_executor_kernel_name(e, k));
    fprintf(f,
            ", \"cat\": \"kernel\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, "
            "\"pid\": 1, \"tid\": 1, \"args\": {\"function\": ",
            t, p->seconds * 1e6);
    trace_string(f, kiln_executor_kernel_func(e, k));
    fprintf(f, ", \"run\": %lld", r);
    trace_num(f, "flops", p->flops);
    trace_num(f, "bytes", p->bytes);
    trace_num(f, "gflops", p->gflops);
    trace_num(f, "gbs", p->gbs);
    trace_num(f, "intensity", p->intensity);
    trace_num(f, "roof_gflops", p->limit_gflops);
    trace_num(f, "roof_share", p->share);
    fprintf(f, ", \"bound\": \"%s\"}}", bound_name(p->bound));
}

int kiln_run_profile(kiln_executor *e, long long runs, long long top, const char *trace) {
    int nk = kiln_executor_num_kernels(e), rc = 0;
    double *secs = calloc((size_t)nk + 1, sizeof *secs);
    kernel_time *kt = calloc((size_t)nk + 1, sizeof *kt);
    FILE *tf = trace ? fopen(trace, "w") : NULL;
    if (!secs || !kt || (trace && !tf)) {
        fprintf(stderr, "kiln run: %s%s%s\n", trace && !tf ? trace : "out of memory",
                trace && !tf ? ": " : "", trace && !tf ? strerror(errno) : "");
        rc = 1;
    }
    int vbits = kiln_executor_vector_bits(e);
    kiln_machine_limits lim;
    int lim_ok = !rc && kiln_machine_limits_get(vbits >= 32 ? vbits / 32 : 16, kiln_num_threads(),
                                                1, &lim) == KILN_OK;
    if (tf)
        fprintf(tf, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [");
    double start = kiln_run_now();
    for (long long r = 0; r < runs && !rc; r++) {
        double t = (kiln_run_now() - start) * 1e6;
        if (kiln_executor_run_profiled(e, secs)) {
            fprintf(stderr, "kiln run: %s\n", kiln_last_error());
            rc = 1;
            break;
        }
        for (int k = 0; k < nk; k++) {
            kt[k].kernel = k;
            kt[k].total += secs[k];
            /* a dynamic plan's counts are this run's; the table shows the last */
            kiln_executor_kernel_cost(e, k, &kt[k].flops, &kt[k].bytes);
            if (!tf)
                continue;
            kiln_roofline p;
            kiln_roofline_point(secs[k], kt[k].flops, kt[k].bytes, lim_ok ? &lim : NULL, &p);
            trace_event(tf, e, k, r, t, &p, !r && !k);
            t += secs[k] * 1e6;
        }
    }
    if (tf) {
        fprintf(tf, "\n]}\n");
        if (fclose(tf) != 0 && !rc) {
            fprintf(stderr, "kiln run: %s: write error\n", trace);
            rc = 1;
        }
    }
    if (!rc) {
        print_machine(&lim, lim_ok, vbits);
        print_profile(e, kt, nk, runs, top, lim_ok ? &lim : NULL);
    }
    free(secs);
    free(kt);
    return rc;
}
