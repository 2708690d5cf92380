/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: any process (main or the supervisor). */
/* duration.h: durations as operators write them: 500ms, 10s, 5m, 2h, 1d, 1h30m. */
#ifndef DURATION_H
#define DURATION_H

#include <stddef.h>
#include <stdint.h>

int duration_parse(const char *text, uint64_t *ms, char **cause);
void duration_format(uint64_t ms, char *buf, size_t len);

#endif
