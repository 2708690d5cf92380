/* SPDX-License-Identifier: Apache-2.0 */
/* sabotage.h: faults built into test builds only (-DLEASEKEEPER_SABOTAGE=ON), for scripts/torture. */
#ifndef LK_SABOTAGE_H
#define LK_SABOTAGE_H

#ifdef LEASEKEEPER_SABOTAGE
#include <stdlib.h>
#include <string.h>

/*
 * Whether the fault NAME is selected by the environment variable LEASEKEEPER_SABOTAGE
 * (no-kill, no-claim-check, late-release). Compiled only into a sabotage build: the normal
 * build has no such code at all.
 */
static inline int
sabotage_on(const char *name)
{
	const char *s = getenv("LEASEKEEPER_SABOTAGE");

	return s != NULL && strcmp(s, name) == 0;
}
#endif

#endif
