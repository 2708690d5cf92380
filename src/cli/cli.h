/* SPDX-License-Identifier: Apache-2.0 */
/* Runs in: a one-shot command. */
/* cli.h: the entry point of each one-shot command (main.c's table calls them). */
#ifndef CLI_H
#define CLI_H

int check_main(int argc, char **argv);
int next_main(int argc, char **argv);
int status_main(int argc, char **argv);
int setleases_main(int argc, char **argv);
int logs_main(int argc, char **argv);
int runnow_main(int argc, char **argv);
int stop_main(int argc, char **argv);
int exec_main(int argc, char **argv);
int control_pause(int argc, char **argv);
int control_resume(int argc, char **argv);
int control_drain(int argc, char **argv);
int control_undrain(int argc, char **argv);
int control_forget(int argc, char **argv);
int initauth_main(int argc, char **argv);

#endif
