/* main.c: the `kiln` binary; the tool itself is libkiln_cli (kiln.c). */
#include "kiln_cli.h"

int main(int argc, char **argv) {
    return kiln_cli_main(argc, argv);
}
