"""Closed and wrong-kind ids: file ids, fork ids, striped ids and
non-blocking handles each answer GFS_EBADID once closed, also after their
slot holds a new object, and that object is not touched (its bytes, its
attributes, its forks are read back).  One id of a kind is refused where
another kind is expected, and ids from before gfs_finalize after the next
gfs_init.  The scenarios are in tests/helpers/t_ids.c."""

import pytest

from conftest import assert_helper_ok


@pytest.mark.parametrize("scenario", ["files", "forks", "striped", "nb",
                                      "kinds"])
def test_stale_ids(cluster, uniq, scenario):
    cp = cluster.helper("t_ids", scenario, uniq)
    assert_helper_ok(cp)
