#include "CNetsimStdio.h"
#include <stdio.h>

void cnetsim_stdout_line_buffered(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
}
