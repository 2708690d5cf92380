/* Runs in: the main process. */
/* exec.h: `leasekeeper exec`: run one command under a lease. */
#ifndef EXEC_H
#define EXEC_H

#include "leasekeeper.h"

int exec_main(int argc, char **argv);

#endif
