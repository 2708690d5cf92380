/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: every process (a command's start). */
/* usage.c: what a command says after a usage error: one line, not the whole usage. */

#include <stdio.h>

#include "leasekeeper.h"
#include "usage.h"

/* Say where CMD's usage is (after the line saying what was wrong); the usage exit status. */
int
usage_hint(const char *cmd)
{
	fprintf(stderr, "Try 'leasekeeper %s%s--help' for its usage.\n", cmd,
	        cmd[0] != '\0' ? " " : "");
	return EXIT_USAGE;
}
