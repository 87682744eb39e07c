/*
 * galley_config.c -- `galley config [NAME...]`: the GALLEY_* environment
 * variables of common/gconfig.c's table, each with its value in this
 * environment ("(default)" when unset; what a number is taken as when
 * that differs from how it is written), its default, its meaning and the
 * programs that read it.  Starts no client.
 *
 * Threads: single-threaded.
 */
#include <stdio.h>
#include <string.h>

#include "galley_cli.h"
#include "gconfig.h"

static void print_var(enum g_cfg_id id)
{
    const g_cfg_var *v = g_config_var(id);
    char value[512], dflt[256], readers[64];
    g_config_value_text(id, value, sizeof(value));
    g_config_default_text(id, dflt, sizeof(dflt));
    g_config_readers_text(id, readers, sizeof(readers));
    printf("%-34s  %-18s  default: %s\n", v->name, value, dflt);
    printf("    %s [%s]\n", v->meaning, readers);
}

/* The table's id of variable name, or -1. */
static int var_id(const char *name)
{
    for (int id = 0; id < G_CFG_COUNT; id++)
        if (strcmp(name, g_config_var(id)->name) == 0)
            return id;
    return -1;
}

int galley_config(int argc, char **argv)
{
    bool want[G_CFG_COUNT] = {false};
    for (int i = 0; i < argc; i++) {
        int id = var_id(argv[i]);
        if (id < 0) {
            fprintf(stderr, "%s: config: no variable '%s' (try '%s config')\n",
                    prog, argv[i], prog);
            return EXIT_USAGE;
        }
        want[id] = true;
    }
    for (int id = 0; id < G_CFG_COUNT; id++)
        if (argc == 0 || want[id])
            print_var(id);
    return EXIT_OK;
}
