/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/*
 * sdnotify.h: the sd_notify(3) protocol without libsystemd: one datagram of NAME=VALUE
 * lines to the AF_UNIX socket in $NOTIFY_SOCKET (a path, or an abstract name after '@').
 * The supervisor never sends: only the main process's loop vouches for the worker.
 */
#ifndef SDNOTIFY_H
#define SDNOTIFY_H

#include <stdint.h>
#include <sys/types.h>

int sdnotify_listening(void);
int sdnotify(const char *message);
uint64_t sdnotify_monotonic_usec(void);
uint64_t sdnotify_watchdog_usec(const char *usec, const char *pid, pid_t self);

#endif
