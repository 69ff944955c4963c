#ifndef CNETSIM_SPAWN_H
#define CNETSIM_SPAWN_H

// posix_spawn(3) with what Swift's Glibc module does not import (GNU extensions, declared only
// with _GNU_SOURCE): the closefrom and chdir file actions. SpawnedProcess (NetsimCore) calls it.

#include <sys/types.h>

/// Starts `path` (looked up in PATH when `search_path` is non-zero) with `argv` and `envp`, in
/// `directory` (the caller's when NULL). The child's standard input, output and error are
/// `stdio[0..2]` (-1: the caller's own); it holds no other descriptor, its signal mask is empty
/// and every signal has its default action. With `new_group` non-zero it leads a process group
/// of its own (its pid), which its descendants join unless they leave it. Returns 0 and sets
/// `*pid`, or an errno value.
int cnetsim_spawn(pid_t *pid, const char *path, int search_path, char *const argv[], char *const envp[],
                  const char *directory, const int stdio[3], int new_group);

#endif
