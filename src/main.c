/* main.c: the command line: run, check, next, status, exec, set-leases. */

#include <stdio.h>

int
main(void)
{
	return 0;
}
