/* child.h: runs in a job's child process, between fork and exec. */
#ifndef CHILD_H
#define CHILD_H

#include <sys/types.h>

#include "supervisor.h"

/*
 * In the child just forked by the supervisor (svpid): become the job described by spec
 * and exec it; output to outfd (-1: inherit), why it failed to errfd. Never returns.
 */
void child_exec(const struct supervisor_spec *, pid_t svpid, int errfd, int outfd)
    __attribute__((noreturn));

#endif
