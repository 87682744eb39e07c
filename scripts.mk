# Installed scripts (kept out of the per-folder fragments that are built by
# others): galley-cluster starts, stops and inspects local or launched
# galleyd servers; galley-hosts runs them on network-namespace hosts.
dist_bin_SCRIPTS += tools/galley-cluster
dist_bin_SCRIPTS += tools/galley-hosts
dist_bin_SCRIPTS += tools/galley-stage
# its planner, imported from beside it or from share/galley
dist_pkgdata_DATA = tools/galley_stage_plan.py
