/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process that talks to the cluster (worker, one-shot commands, web). */
/* jobrec-state.c: a job's tick state as read by jobrec.c: bounded, refused if too new, warned. */

#include <stdio.h>

#include "clock.h"
#include "jobrec-int.h"
#include "jobrec.h"
#include "log.h"
#include "tickstate.h"
#include "znode.h"

#define JOBREC_WARN_NS (60 * 1000000000ULL) /* one warning per kind per minute */

/* Warn about what was wrong with a state read, at most once a minute per job. */
void
jobrec_state_warn(struct jobrec *jr, const struct tickstate *st)
{
	uint64_t now = clock_now_ns();

	if ((st->flags & (TICKSTATE_CORRUPT | TICKSTATE_FUTURE)) != 0)
		jr->corrupt++;
	if (st->flags == 0)
		return;
	if (jr->warned_ns != 0 && now - jr->warned_ns < JOBREC_WARN_NS) {
		jr->warned_dropped++;
		return;
	}
	log_warnx(
	    "job %s: %s %s: %s%s%s (%d similar warning(s) not logged in the last minute)",
	    znode_basename(jr->path), st->flags & TICKSTATE_FUTURE ? "overriding" : "repairing",
	    jr->state_path,
	    st->flags & TICKSTATE_CORRUPT ? "not a JSON object, or larger than the limit; " : "",
	    st->flags & TICKSTATE_TRUNCATED ? "lists too long or of the wrong type, trimmed; " : "",
	    st->flags & TICKSTATE_FUTURE ? "a tick claimed beyond the next few ticks, which "
	                                   "no sane clock claims"
	                                 : "rewritten sanely at the next claim",
	    jr->warned_dropped);
	jr->warned_ns = now;
	jr->warned_dropped = 0;
}

/*
 * The state as read, bounded (none, ZNONODE, reads as empty). Returns 0 if it is of a format
 * this release cannot read: no claim, no mark, no write over it (said once).
 */
int
jobrec_read_state(struct jobrec *jr, const struct zk_reply *reply, struct tickstate *st)
{
	char what[300];

	tickstate_parse(reply->rc == ZOK ? reply->value : NULL,
	                reply->rc == ZOK && reply->value_len > 0 ? (size_t)reply->value_len : 0,
	                st);
	if (format_readable(st->format)) {
		jr->state_newer = 0;
		format_warn_once(&jr->state_fmt, st->format, jr->state_path);
		return 1;
	}
	snprintf(what, sizeof what, "job %s: claiming no tick: its tick state %s",
	         znode_basename(jr->path), jr->state_path);
	format_warn_once(&jr->state_fmt, st->format, what);
	jr->state_newer = st->format;
	tickstate_free(st);
	return 0;
}
