/* build.c: not yet written */
typedef int kiln_placeholder_unit_;
