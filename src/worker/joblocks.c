/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* joblocks.c: a job's locks, as its configuration lists them, made into one lease. */

#include <stdlib.h>

#include "joblocks.h"
#include "xmalloc.h"

/* The lease of every lock the job lists (config-lock.c), taken all or none (lease.c). */
struct lease *
joblocks_lease(struct event_base *base, struct zk *zk, const struct config_job *cj,
               const char *data, const struct lease_cb *cb, void *arg)
{
	struct lease_spec *specs = xcalloc(cj->nlocks, sizeof *specs);
	struct lease *l;
	size_t i;

	for (i = 0; i < cj->nlocks; i++) {
		specs[i].path = cj->locks[i].znode;
		/* enum config_lock_kind has enum lease_kind's order */
		specs[i].kind = (enum lease_kind)cj->locks[i].kind;
		specs[i].leases = cj->locks[i].leases;
	}
	l = lease_new_set(base, zk, specs, (int)cj->nlocks, data, cb, arg);
	free(specs);
	return l;
}

/* Every lock of a lease: [{"path", "mode", "fence"}], fences of the last acquisition. */
json_t *
joblocks_json(const struct lease *l)
{
	json_t *a = json_array();
	int i;

	for (i = 0; i < lease_count(l); i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:I}", "path", lease_lock_path(l, i),
		                                   "mode", lease_kind_name(lease_lock_kind(l, i)),
		                                   "fence", (json_int_t)lease_lock_fence(l, i)));
	return a;
}
