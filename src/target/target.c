/* target.c: target strings. kiln_target_parse reads tvmc's syntax
 *
 *     [BACKEND, ...] KIND [-mtriple=T] [-mcpu=C] [-mattr=+f,-g,...] [-device=D]
 *
 * KIND is llvm, cpu (llvm's synonym), c or host (llvm -mcpu=native).
 * Without -mcpu the CPU is this machine's (native) when neither -mtriple
 * nor -mattr is given, else the baseline of the architecture (x86-64,
 * generic). An -mcpu that names an aarch64 CPU implies its triple. The
 * features are the CPU's (target_cpu.c) plus and minus -mattr's; vector
 * width and registers follow from them. The C compiler is "cc" for this
 * machine's architecture and TRIPLE-gcc for another; its flags name the
 * CPU (-march / -mcpu) and -mattr's changes. Every string prints back in
 * one canonical form that parses to the same target. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

#define MAX_WORDS 32
#define MAX_PARTS 8
#define MAX_TEXT 1000

typedef struct {
    const char *text;           /* the whole string, for messages */
    char buf[2 * MAX_TEXT + 2]; /* the words, NUL-terminated */
    int nparts;
    int nwords[MAX_PARTS];
    char *words[MAX_PARTS][MAX_WORDS];
} tokens;

/* An error about the whole string `text`. */
static kiln_status bad(kiln_status st, const tokens *tk, const char *fmt, ...) KILN_PRINTF(3, 4);
static kiln_status bad(kiln_status st, const tokens *tk, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kiln_set_error(st, "target \"%s\": %s", tk->text, msg);
}

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Cut text into comma-separated parts of space-separated words. A comma
 * inside an option's value followed by more of it ("-mattr=+avx2,+fma")
 * belongs to the option; any other comma ("dnnl, llvm", "dnnl,llvm") ends
 * a part. */
static kiln_status tokenize(tokens *tk, const char *text) {
    memset(tk, 0, sizeof *tk);
    tk->text = text;
    if (strlen(text) > MAX_TEXT)
        return bad(KILN_ERR_INVALID, tk, "longer than %d bytes", MAX_TEXT);
    char *out = tk->buf;
    int part = 0;
    for (const char *p = text;;) {
        while (is_space(*p))
            p++;
        if (!*p)
            break;
        if (*p == ',') {
            if (tk->nwords[part] == 0)
                return bad(KILN_ERR_INVALID, tk, "an empty part before ','");
            if (++part >= MAX_PARTS)
                return bad(KILN_ERR_INVALID, tk, "more than %d parts", MAX_PARTS);
            p++;
            continue;
        }
        if (tk->nwords[part] >= MAX_WORDS)
            return bad(KILN_ERR_INVALID, tk, "more than %d words", MAX_WORDS);
        tk->words[part][tk->nwords[part]++] = out;
        int option = *p == '-';
        while (*p && !is_space(*p)) {
            if (*p == ',' && !(option && p[1] && !is_space(p[1])))
                break;
            *out++ = *p++;
        }
        *out++ = 0;
    }
    if (part == 0 && tk->nwords[0] == 0)
        return bad(KILN_ERR_INVALID, tk, "empty");
    if (tk->nwords[part] == 0)
        return bad(KILN_ERR_INVALID, tk, "an empty part after ','");
    tk->nparts = part + 1;
    return KILN_OK;
}

/* 1 if s is a plain name: letters, digits, '-', '_', '.'. */
static int plain_name(const char *s) {
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.'))
            return 0;
    return 1;
}

/* The architecture of a triple's first component; -1 if kiln has none. */
static int triple_arch(const char *triple) {
    size_t n = strcspn(triple, "-");
    if (n == 6 && !strncmp(triple, "x86_64", 6))
        return TGT_X86_64;
    if (n == 7 && !strncmp(triple, "aarch64", 7))
        return TGT_AARCH64;
    return -1;
}

const char *target_arch_name(tgt_arch a) {
    return a == TGT_AARCH64 ? "aarch64" : "x86_64";
}

/* A backend's name (kiln/byoc.h) before the CPU part: an identifier. The
 * driver checks it against the backends registered (built in, and from
 * plugins loaded by then), which this layer cannot see. */
static kiln_status parse_external(kiln_target *t, tokens *tk, int part) {
    const char *name = tk->words[part][0];
    if (!strcmp(name, "llvm") || !strcmp(name, "cpu") || !strcmp(name, "c") ||
        !strcmp(name, "host"))
        return bad(KILN_ERR_INVALID, tk,
                   "'%s' comes before the last ','; in a composite target only the last part "
                   "is the CPU target (\"dnnl, llvm\")",
                   name);
    int ok = (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z');
    for (const char *c = name; *c && ok; c++)
        ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
             *c == '_';
    if (!ok || strlen(name) > 63 || tk->nwords[part] > 1) {
        char whole[256] = "";
        for (int w = 0; w < tk->nwords[part]; w++)
            snprintf(whole + strlen(whole), sizeof whole - strlen(whole), "%s%s", w ? " " : "",
                     tk->words[part][w]);
        return bad(KILN_ERR_INVALID, tk,
                   "'%s' is not an external backend's name (one identifier, like \"dnnl\"); "
                   "the last part of a composite target is the CPU target",
                   whole);
    }
    for (int i = 0; i < t->n_external; i++)
        if (!strcmp(t->external[i], name))
            return bad(KILN_ERR_INVALID, tk, "external backend '%s' is named twice", name);
    if (t->n_external >= TGT_MAX_EXTERNAL)
        return bad(KILN_ERR_INVALID, tk, "more than %d external backends", TGT_MAX_EXTERNAL);
    if (!(t->external[t->n_external] = kiln_strdup(name)))
        return KILN_ERR_NOMEM;
    t->n_external++;
    return KILN_OK;
}

/* The options of the CPU part. */
typedef struct {
    const char *kind, *triple, *mcpu, *mattr, *device;
} cpu_opts;

static kiln_status read_options(tokens *tk, int part, cpu_opts *o) {
    static const char *const gpu[] = {"cuda",  "nvptx",  "rocm",    "opencl", "vulkan",
                                      "metal", "webgpu", "hexagon", NULL};
    const char *kind = tk->words[part][0];
    memset(o, 0, sizeof *o);
    if (!strcmp(kind, "llvm") || !strcmp(kind, "cpu") || !strcmp(kind, "c") ||
        !strcmp(kind, "host"))
        o->kind = kind;
    for (int i = 0; gpu[i] && !o->kind; i++)
        if (!strcmp(kind, gpu[i]))
            return bad(KILN_ERR_UNSUPPORTED, tk,
                       "target '%s' is not supported (kiln generates CPU code: llvm, cpu, c or "
                       "host)",
                       kind);
    if (!o->kind) {
        if (kind[0] == '-')
            return bad(KILN_ERR_INVALID, tk,
                       "'%s' comes before the target kind (llvm, cpu, c or host)", kind);
        return bad(KILN_ERR_UNSUPPORTED, tk,
                   "unknown target kind '%s' (kiln generates CPU code: llvm, cpu, c or host)",
                   kind);
    }
    static const char *const names[] = {"-mtriple", "-mcpu", "-mattr", "-device"};
    for (int w = 1; w < tk->nwords[part]; w++) {
        const char *word = tk->words[part][w];
        if (word[0] != '-')
            return bad(KILN_ERR_INVALID, tk,
                       "unexpected word '%s' (options look like -mcpu=NAME; a second target "
                       "needs a ',')",
                       word);
        const char *eq = strchr(word, '=');
        size_t klen = eq ? (size_t)(eq - word) : strlen(word);
        const char **slot[] = {&o->triple, &o->mcpu, &o->mattr, &o->device};
        int k = 0;
        while (k < 4 && !(strlen(names[k]) == klen && !strncmp(word, names[k], klen)))
            k++;
        if (k == 4)
            return bad(KILN_ERR_INVALID, tk,
                       "unknown option '%.*s' (known: -mtriple, -mcpu, -mattr, -device)", (int)klen,
                       word);
        if (!eq || !eq[1])
            return bad(KILN_ERR_INVALID, tk, "'%s' needs a value (%s=...)", word, names[k]);
        if (*slot[k])
            return bad(KILN_ERR_INVALID, tk, "%s is given twice", names[k]);
        *slot[k] = eq + 1;
    }
    if (!strcmp(o->kind, "host") && (o->mcpu || o->triple))
        return bad(KILN_ERR_INVALID, tk,
                   "'host' is this machine's CPU: it takes no %s (use llvm %s)",
                   o->mcpu ? "-mcpu" : "-mtriple", o->mcpu ? "-mcpu=..." : "-mtriple=...");
    if (o->device && strcmp(o->device, "cpu") && strcmp(o->device, "arm_cpu"))
        return bad(KILN_ERR_INVALID, tk, "unknown device '%s' in -device (known: cpu, arm_cpu)",
                   o->device);
    return KILN_OK;
}

/* Apply -mattr=+f,-g,... to t->features. */
static kiln_status apply_mattr(kiln_target *t, tokens *tk, const char *mattr) {
    char item[64];
    for (const char *p = mattr; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof item)
            return bad(KILN_ERR_INVALID, tk, "bad -mattr list '%s'", mattr);
        memcpy(item, p, n);
        item[n] = 0;
        p += n + (p[n] == ',');
        if (item[0] != '+' && item[0] != '-')
            return bad(KILN_ERR_INVALID, tk, "feature '%s' in -mattr needs a '+' or '-' (+%s)",
                       item, item);
        const tgt_feature *f = target_feature_find(t->arch, item + 1);
        if (!f)
            return bad(KILN_ERR_INVALID, tk, "unknown feature '%s' for %s in -mattr (known: %s)",
                       item, target_arch_name(t->arch), target_feature_names(t->arch));
        if (f->bit == TGT_NEON && item[0] == '-')
            return bad(KILN_ERR_INVALID, tk, "'-neon': kiln's aarch64 code always uses NEON");
        if (item[0] == '+')
            t->features |= target_feature_closure(f->bit);
        else
            t->features &= ~target_feature_dependents(f->bit);
    }
    return KILN_OK;
}

/* Resolve the triple and the architecture. */
static kiln_status resolve_arch(kiln_target *t, tokens *tk, const cpu_opts *o) {
    tgt_arch host = target_host_arch();
    if (o->triple) {
        int a = triple_arch(o->triple);
        if (!plain_name(o->triple) || a < 0)
            return bad(KILN_ERR_UNSUPPORTED, tk,
                       "unsupported -mtriple '%s' (kiln generates x86_64 and aarch64 code: "
                       "x86_64-linux-gnu, aarch64-linux-gnu)",
                       o->triple);
        const char *rest = o->triple + strcspn(o->triple, "-");
        if (*rest && !strstr(rest, "linux"))
            return bad(KILN_ERR_UNSUPPORTED, tk,
                       "-mtriple '%s' is not a Linux triple (kiln packages are Linux shared "
                       "objects)",
                       o->triple);
        if (strlen(o->triple) + (*rest ? 0 : strlen("-linux-gnu")) >= sizeof t->triple)
            return bad(KILN_ERR_INVALID, tk, "-mtriple '%s' is longer than %d characters",
                       o->triple, (int)sizeof t->triple - 1);
        t->arch = (tgt_arch)a;
        snprintf(t->triple, sizeof t->triple, "%s%s", o->triple, *rest ? "" : "-linux-gnu");
        return KILN_OK;
    }
    t->arch = host;
    /* an -mcpu that only one architecture has names it */
    if (o->mcpu && strcmp(o->mcpu, "native") && !target_cpu_find(host, o->mcpu)) {
        tgt_arch other = host == TGT_X86_64 ? TGT_AARCH64 : TGT_X86_64;
        if (target_cpu_find(other, o->mcpu))
            t->arch = other;
    }
    snprintf(t->triple, sizeof t->triple, "%s-linux-gnu", target_arch_name(t->arch));
    return KILN_OK;
}

/* What -mattr changed from the CPU's features, as few names as say it:
 * an added feature another added one implies, or a removed one that needs
 * another removed one, goes without saying. */
static void mattr_diff(const kiln_target *t, unsigned *add, unsigned *del) {
    unsigned a = t->features & ~t->cpu_features, d = t->cpu_features & ~t->features;
    *add = *del = 0;
    for (int i = 0; target_feature_at(i); i++) {
        unsigned b = target_feature_at(i)->bit;
        if ((a & b) && !(target_feature_closure(a & ~b) & b))
            *add |= b;
        if ((d & b) && !(target_feature_dependents(d & ~b) & b))
            *del |= b;
    }
}

/* The compiler flags of t: its CPU's, then -mattr's changes. */
static char *make_cflags(const kiln_target *t, const tgt_cpu *cpu) {
    kstr s;
    kstr_init(&s);
    kstr_puts(&s, "-O3 ");
    if (!cpu)
        kstr_puts(&s, t->arch == TGT_AARCH64 ? "-mcpu=native" : "-march=native");
    else
        kstr_puts(&s, cpu->flags);
    unsigned add, del;
    mattr_diff(t, &add, &del);
    for (int i = 0; target_feature_at(i); i++) {
        const tgt_feature *f = target_feature_at(i);
        if (f->arch != t->arch || !((add | del) & f->bit))
            continue;
        if (t->arch == TGT_X86_64)
            kstr_printf(&s, " -m%s%s", add & f->bit ? "" : "no-", f->name);
        else /* aarch64: +ext modifiers on the -mcpu / -march word */
            kstr_printf(&s, "+%s%s", add & f->bit ? "" : "no", f->name);
    }
    return kstr_take(&s);
}

static char *make_text(const kiln_target *t) {
    kstr s;
    kstr_init(&s);
    for (int i = 0; i < t->n_external; i++)
        kstr_printf(&s, "%s, ", t->external[i]);
    kstr_printf(&s, "%s -mtriple=%s -mcpu=%s", t->kind, t->triple, t->mcpu);
    unsigned add, del;
    mattr_diff(t, &add, &del);
    const char *sep = " -mattr=";
    for (int i = 0; target_feature_at(i); i++) {
        const tgt_feature *f = target_feature_at(i);
        if (f->arch != t->arch || !((add | del) & f->bit))
            continue;
        kstr_printf(&s, "%s%c%s", sep, add & f->bit ? '+' : '-', f->name);
        sep = ",";
    }
    return kstr_take(&s);
}

/* Vector width and registers from the features. */
static void derive_vectors(kiln_target *t) {
    if (t->arch == TGT_AARCH64) {
        t->vector_bytes = 16;
        t->vector_regs = 32;
    } else {
        t->vector_bytes = target_has(t, TGT_AVX512F) ? 64 : target_has(t, TGT_AVX) ? 32 : 16;
        t->vector_regs = target_has(t, TGT_AVX512F) ? 32 : 16;
    }
}

static kiln_status parse_cpu(kiln_target *t, tokens *tk, int part) {
    cpu_opts o;
    kiln_status st = read_options(tk, part, &o);
    if (st)
        return st;
    snprintf(t->kind, sizeof t->kind, "%s", !strcmp(o.kind, "c") ? "c" : "llvm");
    if ((st = resolve_arch(t, tk, &o)))
        return st;
    tgt_arch host = target_host_arch();
    const char *mcpu = o.mcpu;
    if (!mcpu)
        mcpu = !strcmp(o.kind, "host") || (!o.triple && !o.mattr) ? "native"
               : t->arch == TGT_AARCH64                           ? "generic"
                                                                  : "x86-64";
    const tgt_cpu *cpu = NULL;
    if (!strcmp(mcpu, "native")) {
        if (t->arch != host)
            return bad(KILN_ERR_INVALID, tk,
                       "-mcpu=native names this machine's %s CPU, but the target is %s: name "
                       "one (known: %s)",
                       target_arch_name(host), target_arch_name(t->arch),
                       target_cpu_names(t->arch));
        t->is_host = 1;
        t->cpu_features = target_probe_features();
        target_probe_caches(t->cache);
    } else if ((cpu = target_cpu_find(t->arch, mcpu)) != NULL) {
        t->cpu_features = cpu->features;
        memcpy(t->cache, cpu->cache, sizeof t->cache);
    } else {
        tgt_arch other = t->arch == TGT_X86_64 ? TGT_AARCH64 : TGT_X86_64;
        if (target_cpu_find(other, mcpu))
            return bad(KILN_ERR_INVALID, tk, "CPU '%s' is %s, but -mtriple=%s is %s", mcpu,
                       target_arch_name(other), t->triple, target_arch_name(t->arch));
        return bad(KILN_ERR_INVALID, tk, "unknown CPU '%s' for %s in -mcpu (known: native, %s)",
                   mcpu, target_arch_name(t->arch), target_cpu_names(t->arch));
    }
    snprintf(t->mcpu, sizeof t->mcpu, "%s", mcpu);
    t->features = t->cpu_features;
    if (o.mattr && (st = apply_mattr(t, tk, o.mattr)))
        return st;
    derive_vectors(t);
    /* the compiler: this machine's for its architecture, else TRIPLE-gcc;
       KILN_CC replaces this machine's compiler, and KILN_CFLAGS its flags for
       -mcpu=native only: a named CPU's flags must match the features the
       package records, or the runtime's check would pass code it cannot run */
    const char *cc = getenv("KILN_CC"), *fl = getenv("KILN_CFLAGS");
    char cross[96];
    snprintf(cross, sizeof cross, "%s-gcc", t->triple);
    if (t->arch != host)
        cc = cross;
    else if (!cc || !*cc)
        cc = "cc";
    t->cc = kiln_strdup(cc);
    int native = t->arch == host && !strcmp(t->mcpu, "native");
    t->cflags = native && fl && *fl ? kiln_strdup(fl) : make_cflags(t, cpu);
    t->text = make_text(t);
    return t->cc && t->cflags && t->text ? KILN_OK : KILN_ERR_NOMEM;
}

kiln_status target_parse(const char *text, kiln_target **out) {
    *out = NULL;
    if (!text)
        return kiln_set_error(KILN_ERR_INVALID, "target: NULL string");
    tokens *tk = kiln_malloc(sizeof *tk);
    kiln_target *t = kiln_calloc(1, sizeof *t);
    kiln_status st = tk && t ? tokenize(tk, text) : KILN_ERR_NOMEM;
    for (int p = 0; !st && p + 1 < tk->nparts; p++)
        st = parse_external(t, tk, p);
    if (!st)
        st = parse_cpu(t, tk, tk->nparts - 1);
    free(tk);
    if (st) {
        kiln_target_free(t);
        return st;
    }
    *out = t;
    return KILN_OK;
}

kiln_target *kiln_target_parse(const char *text) {
    kiln_target *t;
    target_parse(text, &t);
    return t;
}

int kiln_target_num_external(const kiln_target *t) {
    return t ? t->n_external : 0;
}

const char *kiln_target_external(const kiln_target *t, int i) {
    return t && i >= 0 && i < t->n_external ? t->external[i] : NULL;
}

kiln_target *kiln_target_host(void) {
    return kiln_target_parse("host");
}

kiln_target *kiln_target_copy(const kiln_target *s) {
    if (!s) {
        kiln_set_error(KILN_ERR_INVALID, "target_copy: NULL target");
        return NULL;
    }
    kiln_target *t = kiln_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    *t = *s;
    t->text = kiln_strdup(s->text);
    t->cc = kiln_strdup(s->cc);
    t->cflags = kiln_strdup(s->cflags);
    int ok = t->text && t->cc && t->cflags;
    for (int i = 0; i < s->n_external; i++)
        ok &= (t->external[i] = kiln_strdup(s->external[i])) != NULL;
    if (!ok) {
        kiln_target_free(t);
        return NULL;
    }
    return t;
}

void kiln_target_free(kiln_target *t) {
    if (!t)
        return;
    free(t->text);
    free(t->cc);
    free(t->cflags);
    for (int i = 0; i < t->n_external; i++)
        free(t->external[i]);
    free(t);
}

const char *kiln_target_str(const kiln_target *t) {
    return t && t->text ? t->text : "";
}
const char *kiln_target_arch(const kiln_target *t) {
    return t ? target_arch_name(t->arch) : "";
}
const char *kiln_target_cpu(const kiln_target *t) {
    return t ? t->mcpu : "";
}
int kiln_target_vector_bits(const kiln_target *t) {
    return t ? t->vector_bytes * 8 : 0;
}
int kiln_target_vector_registers(const kiln_target *t) {
    return t ? t->vector_regs : 0;
}
int64_t kiln_target_cache_bytes(const kiln_target *t, int level) {
    return t && level >= 1 && level <= 3 ? t->cache[level - 1] : 0;
}
const char *kiln_target_cc(const kiln_target *t) {
    return t ? t->cc : NULL;
}
const char *kiln_target_cflags(const kiln_target *t) {
    return t ? t->cflags : NULL;
}

int kiln_target_has(const kiln_target *t, const char *name) {
    if (!t || !name)
        return 0;
    const tgt_feature *f = target_feature_find(t->arch, name);
    return f && target_has(t, f->bit);
}

char *kiln_target_features(const kiln_target *t) {
    kstr s;
    kstr_init(&s);
    for (int i = 0; t && target_feature_at(i); i++) {
        const tgt_feature *f = target_feature_at(i);
        if (f->arch == t->arch && target_has(t, f->bit))
            kstr_printf(&s, "%s%s", s.len ? "," : "", f->name);
    }
    return kstr_take(&s);
}

kiln_status kiln_target_set_compiler(kiln_target *t, const char *cc, const char *cflags) {
    if (!t)
        return kiln_set_error(KILN_ERR_INVALID, "target_set_compiler: NULL target");
    if (cc && !*cc)
        return kiln_set_error(KILN_ERR_INVALID, "target_set_compiler: empty compiler");
    char *c = cc ? kiln_strdup(cc) : NULL, *f = cflags ? kiln_strdup(cflags) : NULL;
    if ((cc && !c) || (cflags && !f)) {
        free(c);
        free(f);
        return KILN_ERR_NOMEM;
    }
    if (c) {
        free(t->cc);
        t->cc = c;
    }
    if (f) {
        free(t->cflags);
        t->cflags = f;
    }
    return KILN_OK;
}

kiln_status kiln_target_set_vector_bits(kiln_target *t, int bits) {
    if (!t)
        return kiln_set_error(KILN_ERR_INVALID, "target_set_vector_bits: NULL target");
    int widest = t->arch == TGT_AARCH64 ? 128 : 512;
    if ((bits != 128 && bits != 256 && bits != 512) || bits > widest)
        return kiln_set_error(KILN_ERR_INVALID, "vector bits %d: %s vectors are 128%s bits wide",
                              bits, target_arch_name(t->arch),
                              t->arch == TGT_AARCH64 ? "" : ", 256 or 512");
    t->vector_bytes = bits / 8;
    if (t->arch == TGT_X86_64)
        t->vector_regs = bits == 512 ? 32 : 16;
    return KILN_OK;
}
