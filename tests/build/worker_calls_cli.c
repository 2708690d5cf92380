/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_calls_cli.c: a probe that must NOT build. It stands for a worker file that calls a
 * one-shot command's function (declared by hand, since cli/'s headers are not in the
 * worker's include path). Linked like the worker (lk_worker and what it may use), it fails
 * with an undefined reference: ctest's boundary.worker_links_no_cli checks that it does.
 */
int status_main(int argc, char **argv);
int boundary_probe(void);

int
boundary_probe(void)
{
	return status_main(0, 0);
}
