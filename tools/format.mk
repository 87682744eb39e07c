# `make check` runs tools/check-format: the tree's C files against the
# committed .clang-format (skipped, saying why, without clang-format).
TESTS += tools/check-format
EXTRA_DIST += tools/check-format tools/check-format.pending .clang-format
