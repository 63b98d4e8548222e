/* main: parse nothing itself; hand argv to the command layer, map status. */
#include "cli.h"

int main(int argc, char **argv)
{
    return eb_cli_main(argc, argv);
}
