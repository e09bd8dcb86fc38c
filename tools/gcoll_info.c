/* gcoll_info: prints the library version and every GCOLL_* variable with its default, as the
 * README's table (--markdown) or one per line. Needs no MPI job. */
#include <stdio.h>
#include <string.h>

#include "gcoll.h"

/* Markdown table cells: a '|' inside one must be escaped. */
static void put_cell(const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            putchar('\\');
        putchar(*s);
    }
}

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
        if (markdown) {
            printf("| `%s` | `%s` | ", v.name, v.default_str);
            put_cell(v.type);
            printf(" | ");
            put_cell(v.description);
            printf(" |\n");
        }
        else
            printf("%s=%s\t(%s) %s\n", v.name, v.default_str, v.type, v.description);
    }
    return 0;
}
