/* roofline.c: the machine's limits, measured once and cached, and a
 * kernel's place under them (kiln/runtime.h, docs/PROFILING.md).
 *
 * The cache is a text file, machine-limits.txt in $XDG_CACHE_HOME/kiln (a
 * relative XDG_CACHE_HOME is ignored, as the XDG spec says) or
 * ~/.cache/kiln, one line a measurement:
 *   CPU-MODEL <tab> THREADS <tab> LANES <tab> PEAK-GFLOPS <tab> BANDWIDTH-GBS
 * A line that does not parse is skipped; a new measurement rewrites the file
 * (through a temporary and a rename) with its line replacing its key's. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime_internal.h"

#define LIMITS_FILE "machine-limits.txt"
/* FMA iterations per thread of one peak measurement: a few milliseconds. */
#define PEAK_ITERS 1000000

/* The CPU's name as /proc/cpuinfo gives it and, on x86, its family and
 * model: VMs name different generations alike ("AMD EPYC" is a Zen 3, a
 * Zen 4 and a Zen 5 on these machines), and the cache must not serve one's
 * figures to another. */
static void cpu_model(char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    long family = -1, model = -1;
    while (fgets(line, sizeof line, f) && (family < 0 || model < 0)) {
        if (!strncmp(line, "cpu family", 10) && strchr(line, ':'))
            family = strtol(strchr(line, ':') + 1, NULL, 10);
        else if (!strncmp(line, "model\t", 6) && strchr(line, ':'))
            model = strtol(strchr(line, ':') + 1, NULL, 10);
    }
    char suffix[64] = "";
    if (family >= 0 && model >= 0)
        snprintf(suffix, sizeof suffix, " (family %ld model %ld)", family, model);
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        static const char *const keys[] = {"model name", "Model", "Hardware", "CPU part"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            size_t n = strlen(keys[k]);
            char *colon = strchr(line, ':');
            if (strncmp(line, keys[k], n) || !colon)
                continue;
            char *v = colon + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            v[strcspn(v, "\n")] = 0;
            for (char *p = v; *p; p++)
                if (*p == '\t' || (unsigned char)*p < 0x20)
                    *p = ' ';
            if (*v) {
                snprintf(out, cap, "%.*s%s", (int)(cap > 64 ? cap - 64 : 1), v, suffix);
                fclose(f);
                return;
            }
        }
    }
    fclose(f);
}

/* The cache folder, made private if missing; 0 if there is none. */
static int cache_dir(char *out, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(out, cap, "%s/kiln", xdg);
    else if (home && home[0] == '/')
        n = snprintf(out, cap, "%s/.cache/kiln", home);
    else
        return 0;
    if (n <= 0 || (size_t)n >= cap - 32)
        return 0;
    for (char *p = out + 1; *p; p++) { /* mkdir -p */
        if (*p != '/')
            continue;
        *p = 0;
        int r = mkdir(out, 0700);
        *p = '/';
        if (r != 0 && errno != EEXIST)
            return 0;
    }
    struct stat sb;
    return (mkdir(out, 0700) == 0 || errno == EEXIST) && stat(out, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Parse one cache line into its fields; 0 if it is not one. */
static int parse_line(char *line, char **cpu, int *threads, int *lanes, double *peak, double *bw) {
    char *f[5], *save = NULL;
    line[strcspn(line, "\n")] = 0;
    int n = 0;
    for (char *t = strtok_r(line, "\t", &save); t && n < 5; t = strtok_r(NULL, "\t", &save))
        f[n++] = t;
    if (n != 5)
        return 0;
    char *end;
    *cpu = f[0];
    *threads = (int)strtol(f[1], &end, 10);
    if (*end || *threads < 1)
        return 0;
    *lanes = (int)strtol(f[2], &end, 10);
    if (*end || *lanes < 1)
        return 0;
    *peak = strtod(f[3], &end);
    if (*end || !(*peak > 0) || !isfinite(*peak))
        return 0;
    *bw = strtod(f[4], &end);
    return !*end && *bw > 0 && isfinite(*bw);
}

/* Look the key up (1 if found, *out's figures set) and, with `save`,
 * rewrite the file with out's figures for it. */
static int cache_io(const char *path, kiln_machine_limits *out, int save) {
    FILE *f = fopen(path, "r");
    kstr keep;
    kstr_init(&keep);
    int found = 0;
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        char copy[1024], *cpu;
        int threads, lanes;
        double peak, bw;
        memcpy(copy, line, sizeof copy);
        if (!parse_line(copy, &cpu, &threads, &lanes, &peak, &bw))
            continue;
        if (!strcmp(cpu, out->cpu) && threads == out->threads && lanes == out->lanes) {
            if (!save) {
                out->peak_gflops = peak;
                out->bandwidth_gbs = bw;
                found = 1;
            }
            continue;
        }
        kstr_puts(&keep, line);
    }
    if (f)
        fclose(f);
    if (save) {
        kstr_printf(&keep, "%s\t%d\t%d\t%.3f\t%.3f\n", out->cpu, out->threads, out->lanes,
                    out->peak_gflops, out->bandwidth_gbs);
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
        FILE *w = keep.oom ? NULL : fopen(tmp, "w");
        int ok = w && fwrite(keep.buf, 1, keep.len, w) == keep.len;
        if (w && fclose(w) != 0)
            ok = 0;
        if (!ok || rename(tmp, path) != 0) {
            unlink(tmp);
            out->source[0] = 0; /* not saved */
        }
    }
    kstr_free(&keep);
    return found;
}

/* Physical cores: the online CPUs over the hardware threads of cpu0's core
 * (its thread_siblings_list, "0-1" or "0,64"); 0 if unknown. */
static int physical_cores(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "r");
    char buf[256];
    int siblings = 0;
    if (f && fgets(buf, sizeof buf, f))
        for (char *p = buf; *p && *p != '\n';) {
            char *end;
            long a = strtol(p, &end, 10), b = a;
            if (end == p)
                break;
            if (*end == '-')
                b = strtol(end + 1, &end, 10);
            siblings += (int)(b - a + 1);
            p = *end == ',' ? end + 1 : end;
            if (*end != ',')
                break;
        }
    if (f)
        fclose(f);
    return cpus > 0 && siblings > 0 ? (int)(cpus / siblings) : 0;
}

/* Let the scheduler spread the pool's threads before timing them (a freshly
 * woken worker may start on its caller's CPU). */
static int spin_chunk(int64_t begin, int64_t end, void *closure) {
    double until = *(const double *)closure;
    (void)begin;
    (void)end;
    while (kiln_now_s() < until) {
    }
    return 0;
}

kiln_status kiln_machine_limits_get(int lanes, int threads, int use_cache,
                                    kiln_machine_limits *out) {
    if (!out || lanes < 1 || threads < 1 || threads > 1024)
        return kiln_set_error(KILN_ERR_INVALID, "machine_limits_get: %s",
                              out ? "lanes and threads must be positive" : "NULL argument");
    memset(out, 0, sizeof *out);
    int used = lanes;
    kiln_measure_fma_gflops(&used, 1, 1); /* the width this CPU runs */
    out->lanes = used;
    out->threads = threads;
    cpu_model(out->cpu, sizeof out->cpu);
    char dir[900];
    if (use_cache && cache_dir(dir, sizeof dir)) {
        snprintf(out->source, sizeof out->source, "%s/" LIMITS_FILE, dir);
        if (cache_io(out->source, out, 0)) {
            out->cached = 1;
            return KILN_OK;
        }
    }
    double until = kiln_now_s() + 0.05;
    kiln_parallel_for(threads, spin_chunk, &until);
    double one = 0;
    for (int rep = 0; rep < 5; rep++) {
        int l = used;
        double g = kiln_measure_fma_gflops(&l, threads, PEAK_ITERS);
        out->peak_gflops = g > out->peak_gflops ? g : out->peak_gflops;
        l = used;
        g = threads > 1 ? kiln_measure_fma_gflops(&l, 1, PEAK_ITERS) : 0;
        one = g > one ? g : one;
    }
    /* threads on as many physical cores scale their peak; one that does not
       was measured beside other work (a build, another benchmark): it serves
       this run but is not kept, or every later profile would read it (a
       2-thread peak of 115 GFLOP/s, one thread's, showed kernels at 190 %
       of their roof) */
    int cores = physical_cores();
    if (threads > 1 && threads <= cores && out->peak_gflops < 0.8 * threads * one)
        out->source[0] = 0;
    out->bandwidth_gbs = kiln_measure_bandwidth_gbs(threads, 0);
    if (!(out->peak_gflops > 0) || !(out->bandwidth_gbs > 0))
        return kiln_set_error(KILN_ERR_NOMEM, "machine_limits_get: could not measure (%s)",
                              out->peak_gflops > 0 ? "no memory for the bandwidth buffers"
                                                   : "the FMA loop took no time");
    /* to the file's precision, so a later read gives the same figures */
    out->peak_gflops = round(out->peak_gflops * 1000) / 1000;
    out->bandwidth_gbs = round(out->bandwidth_gbs * 1000) / 1000;
    if (out->source[0])
        cache_io(out->source, out, 1);
    return KILN_OK;
}

void kiln_roofline_point(double seconds, double flops, double bytes, const kiln_machine_limits *lim,
                         kiln_roofline *out) {
    *out = (kiln_roofline){seconds, flops, bytes, -1, -1, -1, -1, -1, KILN_BOUND_UNKNOWN};
    int has_f = flops >= 0, has_b = bytes >= 0, has_t = seconds > 0;
    if (has_f && has_t)
        out->gflops = flops / seconds / 1e9;
    if (has_b && has_t)
        out->gbs = bytes / seconds / 1e9;
    if (has_f && has_b && bytes > 0)
        out->intensity = flops / bytes;
    if (!lim || !(lim->peak_gflops > 0) || !(lim->bandwidth_gbs > 0) || !has_f || !has_b)
        return;
    if (out->intensity >= 0) {
        double roof = out->intensity * lim->bandwidth_gbs;
        out->limit_gflops = roof < lim->peak_gflops ? roof : lim->peak_gflops;
    }
    double tc = flops / (lim->peak_gflops * 1e9), tm = bytes / (lim->bandwidth_gbs * 1e9);
    out->bound = tc >= tm ? KILN_BOUND_COMPUTE : KILN_BOUND_MEMORY;
    if (has_t && (tc > 0 || tm > 0))
        out->share = (tc > tm ? tc : tm) / seconds;
}
