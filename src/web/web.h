/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the web process (`leasekeeper web`). */
/* web.h: the read-only dashboard of the cluster, a process with its own session. */
#ifndef WEB_H
#define WEB_H

int web_main(int argc, char **argv);

#endif
