/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the supervisor process (pure logic: no process or event calls). */
/* svstamp.h: when and why the supervisor signalled a run, as the run record tells it. */
#ifndef SVSTAMP_H
#define SVSTAMP_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "svrun.h"

enum proto_signal_why svstamp_why(enum svrun_why, int hook);
void svstamp_signal(struct proto_usage *stamp, int sig, enum proto_signal_why, uint64_t now_ms);
void svstamp_output(char *tail, size_t len, int cut, struct proto_usage *);

#endif
