#ifndef CNETSIM_STDIO_H
#define CNETSIM_STDIO_H

// The netsim executable's other start-up setting in C (beside the allocator's): Swift 6 does not
// let Swift code name C's `stdout`, a mutable global.

/// Makes standard output line-buffered (setvbuf _IOLBF), on a pipe or a file as on a terminal.
void cnetsim_stdout_line_buffered(void);

#endif
