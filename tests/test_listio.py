"""List I/O and plain I/O through libgalley, byte-exact."""

import re

import pytest

from conftest import assert_helper_ok


def test_100000_pieces_of_16_bytes_on_4_servers(cluster, uniq):
    cp = cluster.helper("t_listio", "big", uniq, 100000, 16)
    assert_helper_ok(cp)
    assert len(re.findall(r"^subfile \d: 100000 pieces read back byte-exact$",
                          cp.stdout, re.M)) == 4, cp.stdout


def test_pieces_larger_than_a_cache_block(cluster, uniq):
    # 3000 pieces of 40000 B: every piece spans 32 KB cache blocks.
    cp = cluster.helper("t_listio", "big", uniq, 3000, 40000)
    assert_helper_ok(cp)


@pytest.mark.parametrize("scenario", ["zero", "beyond", "large", "spans"])
def test_scenario(cluster, uniq, scenario):
    cp = cluster.helper("t_listio", scenario, uniq)
    assert_helper_ok(cp)


def test_overlap_later_piece_wins(cluster, uniq):
    cp = cluster.helper("t_listio", "overlap", uniq)
    assert_helper_ok(cp)
    assert ("overlap ABC: " + "A" * 25 + "|" + "C" * 25 + "|" + "C" * 25 +
            "|" + "B" * 25 + "|" + "B" * 50) in cp.stdout, cp.stdout
