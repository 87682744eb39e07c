# Installed scripts (kept out of the per-folder fragments that are built by
# others): galley-cluster starts, stops and inspects local or launched
# galleyd servers; galley-hosts runs them on network-namespace hosts;
# galley-stage copies trees between a POSIX file system and Galley.
dist_bin_SCRIPTS += tools/galley-cluster
dist_bin_SCRIPTS += tools/galley-hosts
dist_bin_SCRIPTS += tools/galley-stage
# their Python modules, imported from beside them or from share/galley
dist_pkgdata_DATA = tools/galley_stage_plan.py tools/galley_cluster_common.py \
	tools/galley_cluster_launch.py
