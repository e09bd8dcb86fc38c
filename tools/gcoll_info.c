/* gcoll_info: prints the library version and every GCOLL_* variable with its default, as the
 * README's table (--markdown) or one per line. Needs no MPI job. */
#include <stdio.h>
#include <string.h>

#include "gcoll.h"

int main(int argc, char **argv)
{
    int markdown = argc > 1 && strcmp(argv[1], "--markdown") == 0;
    if (argc > 1 && !markdown) {
        fprintf(stderr, "usage: %s [--markdown]\n", argv[0]);
        return 2;
    }
    if (!markdown)
        printf("gcoll %s\n", gcoll_version());
    for (size_t i = 0; i < gcoll_config_count(); i++) {
        gcoll_config_var_t v;
        if (gcoll_config_var(i, &v) != GCOLL_SUCCESS)
            return 1;
        if (markdown)
            printf("| `%s` | `%s` | %s | %s |\n", v.name, v.default_str, v.type, v.description);
        else
            printf("%s=%s\t(%s) %s\n", v.name, v.default_str, v.type, v.description);
    }
    return 0;
}
