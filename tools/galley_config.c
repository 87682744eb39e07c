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

int galley_config(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        int id = 0;
        while (id < G_CFG_COUNT && strcmp(argv[i], g_config_var(id)->name))
            id++;
        if (id == G_CFG_COUNT) {
            fprintf(stderr, "%s: config: no variable '%s' (try '%s config')\n",
                    prog, argv[i], prog);
            return EXIT_USAGE;
        }
    }
    for (int id = 0; id < G_CFG_COUNT; id++) {
        bool want = argc == 0;
        for (int i = 0; i < argc && !want; i++)
            want = strcmp(argv[i], g_config_var(id)->name) == 0;
        if (want)
            print_var(id);
    }
    return EXIT_OK;
}
