"""hdf5-tests: print the testpar results table at the end of the session."""

import sys


def pytest_terminal_summary(terminalreporter):
    rows = []
    for mod in list(sys.modules.values()):
        rows += getattr(mod, "HDF5_TESTPAR_SUMMARY", None) or []
    if not rows:
        return
    tr = terminalreporter
    tr.section("HDF5 testpar runs (%d)" % len(rows))
    for prefix, what, verdict, seconds in rows:
        tr.write_line("%-7s %-24s %8.1f s  %s" % (prefix, what, seconds,
                                                  verdict))
