/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a job's child process, between the supervisor's fork and exec. */
/* child.h: a job's child, from the supervisor's fork to the exec of its command. */
#ifndef CHILD_H
#define CHILD_H

#include <sys/types.h>

#include "proto.h"

/*
 * In the child just forked by the supervisor (svpid): become the job described by spec
 * and exec it; output to outfd (-1: inherit), why it failed to errfd. cgfd: the run's
 * cgroup to join first (-1: none, or born in it). Never returns.
 */
void child_exec(const struct proto_run *, pid_t svpid, int errfd, int outfd, int cgfd)
    __attribute__((noreturn));

#endif
