#ifndef CNETSIM_ALLOCATOR_H
#define CNETSIM_ALLOCATOR_H

#include "CNetsimStdio.h"

// glibc's mallopt(3), which Swift's Glibc module does not import (<malloc.h>): the netsim
// executable fixes the allocator's thresholds at start (MallocTuning.swift says why).

/// Sets M_MMAP_THRESHOLD and M_TRIM_THRESHOLD (bytes). 0 when both were set; -1 when either was
/// refused or the C library is not glibc.
int cnetsim_allocator_keep_freed_memory(int trim_threshold, int mmap_threshold);

#endif
