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
	fprintf(stderr, "Try 'leasekeeper %s --help' for its usage.\n", cmd);
	return EXIT_USAGE;
}
