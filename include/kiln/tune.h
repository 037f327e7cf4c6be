/* kiln/tune.h: auto-tuning (docs/tuning.md). The default schedules' choices
 * (register tiles, loop orders) are knobs; tuning measures other values on
 * this machine, kernel by kernel, and writes what it measured as records
 * that a build then uses (kiln_build_options_set(o, "tuning-records",
 * path)). */
#ifndef KILN_TUNE_H
#define KILN_TUNE_H

#include "kiln/base.h"
#include "kiln/graph.h"
#include "kiln/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_tune_options kiln_tune_options;
KILN_API kiln_tune_options *kiln_tune_options_new(void);
KILN_API void kiln_tune_options_free(kiln_tune_options *o);
/* Set an option; a bad value is an error naming it. Keys:
 *   "output"          the records file, appended to (required); a run
 *                     resumes from what it already holds
 *   "tuning-records"  more records to start from (read, never written)
 *   "trials"          measurements per task (default 64)
 *   "early-stopping"  stop a task after this many measurements without a
 *                     better one (default 0: never)
 *   "tuner"           xgb (model-guided simulated annealing; the default),
 *                     ga, random or grid
 *   "timeout"         seconds one measurement may take (default 10)
 *   "tasks"           a comma-separated list of task numbers (as listed,
 *                     1-based) or op names ("nn.dense"); default all
 *   "jobs"            candidates compiled at once (default: the cores)
 *   "repeat"          timed rounds per measurement (1-8, default 3)
 *   "seed"            the search's random seed (default 1)
 *   "log-plot"        write the best-so-far curves to this SVG file
 *   "test-fault"      for tests of the runner: "crash:N" or "hang:N"
 *                     makes the N-th measurement crash or hang (a task's
 *                     first two are its default kernel's) */
KILN_API kiln_status kiln_tune_options_set(kiln_tune_options *o, const char *key,
                                           const char *value);
/* Where the run's report goes: level 0 is a progress line that the next
 * line may overwrite, level 1 a line to keep. Default: stderr. */
typedef void (*kiln_tune_log_fn)(void *user, int level, const char *line);
KILN_API kiln_status kiln_tune_options_set_log(kiln_tune_options *o, kiln_tune_log_fn fn,
                                               void *user);
/* Tune the kernels of g as `build` would build them (its target, passes and
 * options), writing the records to the "output" option's file. A candidate
 * that fails to build, crashes, hangs or computes other outputs than the
 * default kernel is recorded with its error and the run goes on. */
KILN_API kiln_status kiln_graph_tune(kiln_graph *g, const kiln_build_options *build,
                                     const kiln_tune_options *tune);

#ifdef __cplusplus
}
#endif

#endif
