/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* clock.h: the clocks leasekeeper measures with. */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>

#define CLOCK_NS_PER_MS 1000000ULL

uint64_t clock_now_ns(void);
uint64_t clock_wall_ms(void);
void clock_iso8601(uint64_t wall_ms, char *buf, unsigned long len);

#endif
