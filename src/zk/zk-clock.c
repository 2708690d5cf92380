/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/*
 * zk-clock.c: this host's clock against the ZooKeeper servers', from the mtime of our own
 * writes (clockoff.c does the arithmetic). Every answered create or set of this session is
 * a sample, at no cost in requests; the worker rewrites its node now and then so that an
 * idle worker keeps one. The offset is this host's wall clock minus the servers': positive
 * when this host is ahead. Past ZK_CLOCK_WARN_MS it is logged once, and again whenever it
 * moved by more than that since the last word.
 */

#include <stdlib.h>
#include <sys/time.h>

#include "clock.h"
#include "zk-int.h"

#define ZK_CLOCK_WARN_MS   1000  /* an offset worth a warning */
#define ZK_CLOCK_BUCKET_MS 60000 /* the window is CLOCKOFF_BUCKETS of these: 8 minutes */

/* Start with no estimate. */
void
zk_clock_init(struct zk *zk)
{
	clockoff_init(&zk->clock, (uint64_t)ZK_CLOCK_BUCKET_MS * CLOCK_NS_PER_MS);
}

/* Say once that the clock is off, and again when that changed much. */
static void
zk_clock_warn(struct zk *zk, int64_t off, int64_t err)
{
	int64_t warn = (int64_t)ZK_CLOCK_WARN_MS * 1000;

	if (llabs(off) - err <= warn) {
		if (zk->clock_warned && llabs(off) + err < warn) {
			log_info(
			    "zookeeper: this host's clock is within %lld ms of ZooKeeper's again "
			    "(%+.3f s, +-%.3f s)",
			    (long long)ZK_CLOCK_WARN_MS, (double)off / 1e6, (double)err / 1e6);
			zk->clock_warned = 0;
		}
		return;
	}
	if (zk->clock_warned && llabs(off - zk->clock_warned_us) <= warn)
		return;
	log_warnx("zookeeper: this host's clock is %.3f s %s of ZooKeeper's (+-%.3f s, from the "
	          "time the servers stamped on our writes): fix its time synchronisation "
	          "(chrony, systemd-timesyncd); ticks are timed by the cluster's clock, but this "
	          "host's logs and records carry its own",
	          (double)llabs(off) / 1e6, off > 0 ? "ahead" : "behind", (double)err / 1e6);
	zk->clock_warned = 1;
	zk->clock_warned_us = off;
}

/* An answered request: if it is one of our writes, a sample of the offset. */
void
zk_clock_note(struct zk *zk, const struct zk_op *op)
{
	int64_t off, err;
	uint64_t now = clock_now_ns();

	if (op->rc != ZOK || !op->has_stat || op->sent_us == 0 ||
	    (op->type != ZK_OP_CREATE && op->type != ZK_OP_SET))
		return;
	if (clockoff_add(&zk->clock, op->sent_us, op->recv_us, op->stat.mtime, now) != 0)
		return;
	if (clockoff_get(&zk->clock, now, &off, &err) == 0)
		zk_clock_warn(zk, off, err);
}

/*
 * This host's clock minus the servers' and its error bound, in milliseconds: 0, or -1
 * while no write of the last minutes was answered.
 */
int
zk_clock_offset(const struct zk *zk, int64_t *offset_ms, int64_t *error_ms)
{
	int64_t off, err;

	if (clockoff_get(&zk->clock, clock_now_ns(), &off, &err) != 0)
		return -1;
	*offset_ms = off >= 0 ? (off + 500) / 1000 : -((-off + 500) / 1000);
	*error_ms = (err + 999) / 1000;
	return 0;
}

/*
 * The servers' wall clock now, in milliseconds, as well as we know it (within the error
 * of zk_clock_offset); this host's wall clock while there is no estimate. For the tick
 * logic: a tick is due by the cluster's clock.
 */
uint64_t
zk_cluster_now_ms(const struct zk *zk)
{
	int64_t off, err, now = (int64_t)clock_wall_ms();

	if (zk_clock_offset(zk, &off, &err) != 0)
		return (uint64_t)now;
	return (uint64_t)(now - off);
}
