/*
 * commands: entry points of the sub-commands that live outside cli.c.
 * Each takes the arguments after its own name (argv[0] is the command name)
 * and returns the process exit status (0 ok, 1 failure, 2 usage/input error).
 */
#ifndef EB_COMMANDS_H
#define EB_COMMANDS_H

/* einsum-bench gen lm --depth D --hidden H --vocab V --batch B ... */
int eb_cmd_gen(int argc, char **argv);

/* einsum-bench path [--minimize flops|size] [--strategy NAME] INSTANCE ... */
int eb_cmd_path(int argc, char **argv);

#endif
