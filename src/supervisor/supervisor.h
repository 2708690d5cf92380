/* Runs in: the supervisor process. */
/* supervisor.h: the supervisor process's entry point. */
#ifndef SUPERVISOR_H
#define SUPERVISOR_H

/* The supervisor's life, on the socket at fd (main forks it: svlink.c). Returns the exit status. */
int supervisor_main(int fd);

#endif
