"""Strided, nested, batched, non-blocking and split-phase (GFS-GROUP)
requests, the SFIO layer and the striped-file coordination services."""

import pytest

from conftest import assert_helper_ok


@pytest.mark.parametrize("scenario", [
    "strided", "nested", "batch", "nb", "group", "sfio", "coord"])
def test_scenario(cluster, uniq, scenario):
    cp = cluster.helper("t_structured", scenario, uniq)
    assert_helper_ok(cp)
