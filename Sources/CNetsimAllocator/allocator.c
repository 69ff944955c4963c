#include "CNetsimAllocator.h"
#include <stdlib.h>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>

int cnetsim_allocator_keep_freed_memory(int trim_threshold, int mmap_threshold) {
    // mallopt returns 1 on success, 0 on error.
    if (mallopt(M_MMAP_THRESHOLD, mmap_threshold) != 1) return -1;
    if (mallopt(M_TRIM_THRESHOLD, trim_threshold) != 1) return -1;
    return 0;
}
#else
int cnetsim_allocator_keep_freed_memory(int trim_threshold, int mmap_threshold) {
    (void)trim_threshold;
    (void)mmap_threshold;
    return -1;
}
#endif
