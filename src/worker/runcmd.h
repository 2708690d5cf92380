/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: the worker's main process (`leasekeeper run`). */
/* runcmd.h: `leasekeeper run`. */
#ifndef RUNCMD_H
#define RUNCMD_H

int runcmd_main(int argc, char **argv);

#endif
