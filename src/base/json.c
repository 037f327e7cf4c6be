/* json.c: a recursive-descent JSON parser. Strict RFC 8259: no comments,
 * trailing commas, NaN or leading zeros; strings must be valid UTF-8 with
 * paired surrogate escapes; object keys must be unique. Errors carry
 * line:column. The tree lives in the caller's arena. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

typedef struct {
    arena *ar;
    const char *p, *end, *line_start;
    int line, depth;
    const char *what;
} parser;

static json *fail(parser *ps, const char *at, const char *msg) {
    kiln_set_error(KILN_ERR_IO, "%s:%d:%d: %s", ps->what, ps->line, (int)(at - ps->line_start) + 1,
                   msg);
    return NULL;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '\n') {
            ps->line++;
            ps->line_start = ps->p + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return;
        }
        ps->p++;
    }
}

static json *new_value(parser *ps, json_type t) {
    json *v = arena_alloc(ps->ar, sizeof *v);
    v->type = t;
    v->line = ps->line;
    v->col = (int)(ps->p - ps->line_start) + 1;
    return v;
}

/* ---- strings ------------------------------------------------------------------ */

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int d = kiln_hex_digit(p[k]);
        if (d < 0)
            return 0;
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return 1;
}

static char *put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xC0 | (cp >> 6));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xE0 | (cp >> 12));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (char)(0xF0 | (cp >> 18));
        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (char)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), or 0. */
static int utf8_seq(const unsigned char *p, const unsigned char *end) {
    unsigned c = p[0], cp;
    int n;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if (end - p < n)
        return 0;
    for (int k = 1; k < n; k++) {
        if ((p[k] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[k] & 0x3Fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0; /* overlong, out of range, or a surrogate */
    return n;
}

/* The character an escape "\\e" stands for, or -1 (not \\u). */
static int simple_escape(char e) {
    switch (e) {
    case '"': return '"';
    case '\\': return '\\';
    case '/': return '/';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return -1;
    }
}

/* Parse the string at ps->p (at the opening quote) into *out and *len. */
static int parse_string_raw(parser *ps, const char **out, size_t *len) {
    const char *start = ps->p++, *q = ps->p;
    while (q < ps->end && *q != '"')
        q += *q == '\\' && q + 1 < ps->end ? 2 : 1;
    if (q >= ps->end)
        return fail(ps, start, "unterminated string") != NULL;
    char *buf = arena_alloc(ps->ar, (size_t)(q - ps->p) + 1), *o = buf;
    while (ps->p < q) {
        const char *at = ps->p;
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20)
            return fail(ps, at, "control character in string (escape it)") != NULL;
        if (c >= 0x80) {
            int n = utf8_seq((const unsigned char *)ps->p, (const unsigned char *)q);
            if (!n)
                return fail(ps, at, "invalid UTF-8 in string") != NULL;
            memcpy(o, ps->p, (size_t)n);
            o += n;
            ps->p += n;
            continue;
        }
        ps->p++;
        if (c != '\\') {
            *o++ = (char)c;
            continue;
        }
        char e = *ps->p++;
        int simple = simple_escape(e);
        if (simple >= 0) {
            *o++ = (char)simple;
            continue;
        }
        if (e != 'u')
            return fail(ps, at, "invalid escape in string") != NULL;
        unsigned cp, lo;
        if (q - ps->p < 4 || !hex4(ps->p, &cp))
            return fail(ps, at, "\\u needs four hex digits") != NULL;
        ps->p += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return fail(ps, at, "unpaired low surrogate \\u escape") != NULL;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (q - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' || !hex4(ps->p + 2, &lo) ||
                lo < 0xDC00 || lo > 0xDFFF)
                return fail(ps, at, "high surrogate \\u escape without a low surrogate") != NULL;
            ps->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        o = put_utf8(o, cp);
    }
    ps->p = q + 1;
    *o = 0;
    *out = buf;
    *len = (size_t)(o - buf);
    return 1;
}

/* ---- numbers ------------------------------------------------------------------ */

static int is_digit(const parser *ps, const char *p) {
    return p < ps->end && *p >= '0' && *p <= '9';
}

static json *parse_number(parser *ps) {
    const char *s = ps->p, *p = s;
    int integral = 1;
    if (p < ps->end && *p == '-')
        p++;
    if (!is_digit(ps, p))
        return fail(ps, s, "invalid number");
    if (*p == '0' && is_digit(ps, p + 1))
        return fail(ps, s, "leading zero in number");
    while (is_digit(ps, p))
        p++;
    if (p < ps->end && *p == '.') {
        integral = 0;
        if (!is_digit(ps, ++p))
            return fail(ps, s, "expected a digit after '.'");
        while (is_digit(ps, p))
            p++;
    }
    if (p < ps->end && (*p == 'e' || *p == 'E')) {
        integral = 0;
        p++;
        if (p < ps->end && (*p == '+' || *p == '-'))
            p++;
        if (!is_digit(ps, p))
            return fail(ps, s, "expected a digit in the exponent");
        while (is_digit(ps, p))
            p++;
    }
    json *v = new_value(ps, JSON_INT);
    if (integral) { /* accumulate negatively so INT64_MIN fits */
        int64_t acc = 0;
        int neg = *s == '-', ok = 1;
        for (const char *d = s + neg; d < p && ok; d++) {
            int digit = *d - '0';
            if (acc < (INT64_MIN + digit) / 10)
                ok = 0;
            else
                acc = acc * 10 - digit;
        }
        if (ok && (neg || acc != INT64_MIN)) {
            v->i = neg ? acc : -acc;
            v->d = (double)v->i;
            ps->p = p;
            return v;
        }
    }
    char *tmp = arena_alloc(ps->ar, (size_t)(p - s) + 1);
    memcpy(tmp, s, (size_t)(p - s));
    errno = 0;
    v->type = JSON_DOUBLE;
    v->d = strtod(tmp, NULL);
    if (errno == ERANGE && (v->d > 1 || v->d < -1))
        return fail(ps, s, "number out of range");
    ps->p = p;
    return v;
}

/* ---- values ------------------------------------------------------------------- */

static json *parse_value(parser *ps);

static int key_cmp(const void *a, const void *b) {
    const json *x = *(json *const *)a, *y = *(json *const *)b;
    size_t n = x->slen < y->slen ? x->slen : y->slen;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->slen > y->slen) - (x->slen < y->slen);
}

/* Array or object at ps->p (at '[' or '{'). */
static json *parse_container(parser *ps, int is_obj) {
    json *v = new_value(ps, is_obj ? JSON_OBJECT : JSON_ARRAY);
    char close = is_obj ? '}' : ']';
    json *head = NULL, **tail = &head, *khead = NULL, **ktail = &khead;
    if (++ps->depth > JSON_MAX_DEPTH)
        return fail(ps, ps->p, "nesting deeper than 64 levels");
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
    } else {
        for (;;) {
            if (is_obj) {
                skip_ws(ps);
                if (ps->p >= ps->end || *ps->p != '"')
                    return fail(ps, ps->p, "expected a key string");
                json *k = new_value(ps, JSON_STRING);
                if (!parse_string_raw(ps, &k->s, &k->slen))
                    return NULL;
                *ktail = k;
                ktail = &k->next;
                skip_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':')
                    return fail(ps, ps->p, "expected ':'");
                ps->p++;
            }
            json *item = parse_value(ps);
            if (!item)
                return NULL;
            if (v->n == INT32_MAX)
                return fail(ps, ps->p, "too many items");
            v->n++;
            *tail = item;
            tail = &item->next;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                continue;
            }
            if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                break;
            }
            return fail(ps, ps->p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    ps->depth--;
    v->items = arena_alloc(ps->ar, (size_t)v->n * sizeof(json *));
    for (int i = 0; head; head = head->next)
        v->items[i++] = head;
    if (!is_obj)
        return v;
    json **sorted = arena_alloc(ps->ar, (size_t)v->n * sizeof(json *));
    v->keys = arena_alloc(ps->ar, (size_t)v->n * sizeof(char *));
    for (int i = 0; khead; khead = khead->next, i++)
        v->keys[i] = (sorted[i] = khead)->s;
    qsort(sorted, (size_t)v->n, sizeof *sorted, key_cmp);
    for (int i = 1; i < v->n; i++)
        if (key_cmp(&sorted[i - 1], &sorted[i]) == 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "duplicate key \"%.100s\" in the object at line %d",
                     sorted[i]->s, v->line);
            kiln_set_error(KILN_ERR_IO, "%s:%d:%d: %s", ps->what, sorted[i]->line, sorted[i]->col,
                           msg);
            return NULL;
        }
    return v;
}

static json *parse_literal(parser *ps, const char *word, json_type t, int64_t i) {
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, ps->p, "unexpected character (expected a value)");
    json *v = new_value(ps, t);
    v->i = i;
    ps->p += n;
    return v;
}

static json *parse_value(parser *ps) {
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, ps->p, "unexpected end of input (expected a value)");
    switch (*ps->p) {
    case '{': return parse_container(ps, 1);
    case '[': return parse_container(ps, 0);
    case 't': return parse_literal(ps, "true", JSON_BOOL, 1);
    case 'f': return parse_literal(ps, "false", JSON_BOOL, 0);
    case 'n': return parse_literal(ps, "null", JSON_NULL, 0);
    case '"': {
        json *v = new_value(ps, JSON_STRING);
        return parse_string_raw(ps, &v->s, &v->slen) ? v : NULL;
    }
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
            return parse_number(ps);
        return fail(ps, ps->p, "unexpected character (expected a value)");
    }
}

json *json_parse(arena *a, const char *text, size_t len, const char *what) {
    if (!what)
        what = "json";
    if (!a || (!text && len)) {
        kiln_set_error(KILN_ERR_INVALID, "%s: json_parse: NULL argument", what);
        return NULL;
    }
    if (len > JSON_MAX_SIZE) {
        kiln_set_error(KILN_ERR_IO, "%s: %zu bytes is larger than the JSON limit of %zu", what, len,
                       JSON_MAX_SIZE);
        return NULL;
    }
    parser ps = {a, text, text + len, text, 1, 0, what};
    json *v = parse_value(&ps);
    if (!v)
        return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end)
        return fail(&ps, ps.p, "unexpected text after the value");
    return v;
}

/* ---- accessors ---------------------------------------------------------------- */

const char *json_type_name(json_type t) {
    static const char *const names[] = {"null",   "boolean", "integer", "number",
                                        "string", "array",   "object"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

const json *json_get(const json *v, const char *key) {
    if (!v || v->type != JSON_OBJECT || !key)
        return NULL;
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0)
            return v->items[i];
    return NULL;
}

int json_len(const json *v) {
    return v && (v->type == JSON_ARRAY || v->type == JSON_OBJECT) ? v->n : -1;
}

const json *json_at(const json *v, int i) {
    return i >= 0 && i < json_len(v) ? v->items[i] : NULL;
}

int json_int(const json *v, int64_t *out) {
    if (!v || v->type != JSON_INT)
        return 0;
    *out = v->i;
    return 1;
}

const char *json_str(const json *v) {
    return v && v->type == JSON_STRING ? v->s : NULL;
}

int json_is(const json *v, json_type t) {
    return v && v->type == t;
}

/* ---- writing ------------------------------------------------------------------ */

void json_write_string(kstr *out, const char *s) {
    kstr_putc(out, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\n' ? "\\n"
                          : c == '\t' ? "\\t"
                          : c == '\r' ? "\\r"
                                      : NULL;
        if (esc)
            kstr_puts(out, esc);
        else if (c < 0x20)
            kstr_printf(out, "\\u%04x", c);
        else
            kstr_putc(out, (char)c);
    }
    kstr_putc(out, '"');
}
