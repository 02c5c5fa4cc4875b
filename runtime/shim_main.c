/* shim_main.c: the abx-shim executable, started (detached) by libabx for
 * every persistent local sandbox. See shim.h. */
#include "shim.h"

int main(int argc, char **argv)
{
    return abx__shim_main(argc, argv);
}
