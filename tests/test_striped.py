"""SFIO-style striped files: layout, list I/O, logical size."""

import pytest

from conftest import assert_helper_ok, helper_path, run


def test_layout_arithmetic():
    cp = run([helper_path("t_striped"), "math"])
    assert_helper_ok(cp)


@pytest.mark.parametrize("scenario", ["layout", "listio", "size", "rangeio"])
def test_scenario(cluster, uniq, scenario):
    cp = cluster.helper("t_striped", scenario, uniq)
    assert_helper_ok(cp)
