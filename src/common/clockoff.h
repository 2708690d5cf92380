/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the main process. */
/* clockoff.h: the offset of this host's clock to ZooKeeper's, from the mtime of our writes. */
#ifndef CLOCKOFF_H
#define CLOCKOFF_H

#include <stdint.h>

#define CLOCKOFF_BUCKETS 8 /* the window, in buckets of one best sample each */

/* The best sample (the smallest round trip) of one bucket of time. */
struct clockoff_sample {
	int64_t offset_us; /* this host's clock minus the server's */
	int64_t error_us;  /* the true offset is within offset_us +- error_us */
	uint64_t bucket;   /* the bucket's number (monotonic time / bucket length); 0: empty */
};

struct clockoff {
	uint64_t bucket_ns; /* the window is CLOCKOFF_BUCKETS buckets this long */
	struct clockoff_sample s[CLOCKOFF_BUCKETS];
};

void clockoff_init(struct clockoff *, uint64_t bucket_ns);
int clockoff_add(struct clockoff *, int64_t send_us, int64_t recv_us, int64_t server_ms,
                 uint64_t now_ns);
int clockoff_get(const struct clockoff *, uint64_t now_ns, int64_t *offset_us, int64_t *error_us);

#endif
