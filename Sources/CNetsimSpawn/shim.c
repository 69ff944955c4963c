#define _GNU_SOURCE
#include "CNetsimSpawn.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>

int cnetsim_spawn(pid_t *pid, const char *path, int search_path, char *const argv[], char *const envp[],
                  const char *directory, const int stdio[3], int new_group) {
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_t actions;
    int result = posix_spawnattr_init(&attributes);
    if (result != 0) return result;
    result = posix_spawn_file_actions_init(&actions);
    if (result != 0) { posix_spawnattr_destroy(&attributes); return result; }

    // A clean signal state, as a shell gives the commands it runs: the spawning thread may be one
    // of Dispatch's, which block most signals, and netsim ignores SIGPIPE; both would be inherited.
    sigset_t empty, all;
    sigemptyset(&empty);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (result == 0) result = posix_spawnattr_setsigmask(&attributes, &empty);
    if (result == 0) result = posix_spawnattr_setsigdefault(&attributes, &all);
    if (new_group) {
        flags |= POSIX_SPAWN_SETPGROUP;
        if (result == 0) result = posix_spawnattr_setpgroup(&attributes, 0);
    }

    for (int target = 0; target < 3 && result == 0; target++) {
        if (stdio[target] >= 0) {
            result = posix_spawn_file_actions_adddup2(&actions, stdio[target], target);
        }
#ifdef __APPLE__
        else {
            result = posix_spawn_file_actions_addinherit_np(&actions, target);
        }
#endif
    }
    // No other descriptor: netsim's sockets, pipes and the test runner's are not the child's.
#ifdef __APPLE__
    flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
#else
    if (result == 0) result = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    if (result == 0 && directory != NULL) result = posix_spawn_file_actions_addchdir_np(&actions, directory);
    if (result == 0) result = posix_spawnattr_setflags(&attributes, flags);

    if (result == 0) {
        result = search_path ? posix_spawnp(pid, path, &actions, &attributes, argv, envp)
                             : posix_spawn(pid, path, &actions, &attributes, argv, envp);
    }
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    return result;
}
