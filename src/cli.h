/*
 * cli: the command layer. Parses arguments, applies the thread budget to
 * the process (re-executing itself so OpenBLAS sizes its pool at load),
 * runs a command and maps its outcome to the exit status:
 * 0 all ok, 1 a measurement or check failed, 2 usage or input error.
 */
#ifndef EB_CLI_H
#define EB_CLI_H

int eb_cli_main(int argc, char **argv);

#endif
