/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: every process (a command's start). */
/* usage.h: what a command says after a usage error. */
#ifndef USAGE_H
#define USAGE_H

int usage_hint(const char *cmd);

#endif
