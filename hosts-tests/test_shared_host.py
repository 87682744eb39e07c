"""Several servers on one host: each rank of the host writes to the
server at its node-local rank (MPI_LOCALRANKID from hydra)."""

import re

from conftest import BUILD, ms

HEAT = BUILD / "arrays" / "heat"


def test_ranks_pick_their_servers_by_node_local_rank(testbed2x2):
    tb = testbed2x2
    before = tb.iostat()
    cp, _ = tb.mpiexec(4, 2, [HEAT, "--path", "galley:/shared/loc", "-n", 240,
                              "--grid", "4x1", "--steps", 20, "--ts-every", 0,
                              "--hint", "galley_layout=local",
                              "--hint", "striping_unit=960"])
    assert cp.returncode == 0, ms.describe(cp)
    d = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(tb.iostat(), before)]
    assert all(remote == 0 for _, remote in d), d
    assert all(local > 0 for local, _ in d), d        # all four servers
    st = tb.galley(1, "stat", "/shared/loc.ckpt.T.0").stdout
    assert re.findall(r"^  server \d+ \(.*\): (\d+) blocks$", st, re.M) == \
        ["120"] * 4, st
