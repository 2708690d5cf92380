/* Runs in: the main process. */
/* control.h: the cluster-wide controls: pause, resume, drain, undrain, forget. */
#ifndef CONTROL_H
#define CONTROL_H

int control_pause(int argc, char **argv);
int control_resume(int argc, char **argv);
int control_drain(int argc, char **argv);
int control_undrain(int argc, char **argv);
int control_forget(int argc, char **argv);

#endif
