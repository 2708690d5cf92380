/* Runs in: the main process. */
/* runnow.h: `leasekeeper run-now JOB`: ask the cluster for one run of a job now. */
#ifndef RUNNOW_H
#define RUNNOW_H

int runnow_main(int argc, char **argv);

#endif
