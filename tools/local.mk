# The `galley` command-line tool (ping, ls, stat, rm, create, put, get, df,
# fork ...).  Uses only the public client API.
bin_PROGRAMS += tools/galley
tools_galley_SOURCES = tools/galley.c tools/fsck.c
tools_galley_LDADD = libgalley/libgalley.la
