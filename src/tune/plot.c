/* plot.c: the best-so-far curves of a tuning run as one SVG picture
 * (kiln tune --log-plot): per task, the best GFLOP/s after each
 * measurement, one polyline each, on shared axes, with a legend. Plain SVG
 * 1.1 text that any browser opens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "tune_internal.h"

#define W 900.0
#define H 520.0
#define LEFT 70.0
#define RIGHT 250.0
#define TOP 30.0
#define BOTTOM 50.0

static const char *const COLORS[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                     "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

/* XML text: escape &, < and > */
static void put_text(kstr *s, const char *t) {
    for (; *t; t++) {
        if (*t == '&')
            kstr_puts(s, "&amp;");
        else if (*t == '<')
            kstr_puts(s, "&lt;");
        else if (*t == '>')
            kstr_puts(s, "&gt;");
        else
            kstr_putc(s, *t);
    }
}

kiln_status tune_write_svg(const char *path, int n, const tune_curve *curves) {
    int xmax = 1;
    double ymax = 1e-9;
    for (int c = 0; c < n; c++) {
        xmax = curves[c].n > xmax ? curves[c].n : xmax;
        for (int i = 0; i < curves[c].n; i++)
            ymax = curves[c].gflops[i] > ymax ? curves[c].gflops[i] : ymax;
    }
    ymax *= 1.05;
    double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
    kstr s;
    kstr_init(&s);
    kstr_printf(&s,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"%.0f\" y=\"18\" font-size=\"14\">kiln tune: best GFLOP/s so far, "
                "per task</text>\n",
                W, H, LEFT);
    /* axes, with five ticks each */
    kstr_printf(&s,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
                LEFT, TOP + ph, LEFT + pw, TOP + ph, LEFT, TOP, LEFT, TOP + ph);
    for (int t = 0; t <= 5; t++) {
        double x = LEFT + pw * t / 5, y = TOP + ph - ph * t / 5;
        kstr_printf(&s,
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n"
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n"
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                    x, TOP + ph + 18, (int)((double)xmax * t / 5 + 0.5), LEFT - 6, y + 4,
                    ymax * t / 5, LEFT, y, LEFT + pw, y);
    }
    kstr_printf(&s,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">measurements</text>\n"
                "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" "
                "text-anchor=\"middle\">GFLOP/s</text>\n",
                LEFT + pw / 2, H - 10, TOP + ph / 2, TOP + ph / 2);
    for (int c = 0; c < n; c++) {
        const char *col = COLORS[c % (int)(sizeof COLORS / sizeof COLORS[0])];
        kstr_printf(&s, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                    col);
        for (int i = 0; i < curves[c].n; i++)
            kstr_printf(&s, "%s%.1f,%.1f", i ? " " : "",
                        LEFT + pw * (xmax > 1 ? (double)i / (xmax - 1) : 0),
                        TOP + ph - ph * curves[c].gflops[i] / ymax);
        kstr_puts(&s, "\"/>\n");
        if (c < 30) { /* the legend: the first 30 tasks */
            double y = TOP + 14 * c + 6;
            kstr_printf(&s,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                        "stroke-width=\"3\"/>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">",
                        LEFT + pw + 10, y, LEFT + pw + 28, y, col, LEFT + pw + 32, y + 4);
            put_text(&s, curves[c].label);
            kstr_puts(&s, "</text>\n");
        }
    }
    kstr_puts(&s, "</svg>\n");
    FILE *f = fopen(path, "w");
    int ok = f && fwrite(s.buf, 1, s.len, f) == s.len;
    if (f && fclose(f))
        ok = 0;
    kstr_free(&s);
    return ok ? KILN_OK : kiln_set_error(KILN_ERR_IO, "%s: cannot write the plot", path);
}
