"""Pipelines built on the aligners: guide trees for progressive multiple
alignment, read overlaps for assembly, and query-against-targets search."""

from .overlap import Overlap, find_overlaps, write_paf
from .search import search, write_blast6, write_search_tsv
from .tree import distance_matrix, guide_tree, write_distances, write_newick

__all__ = ["distance_matrix", "guide_tree", "write_distances", "write_newick",
           "Overlap", "find_overlaps", "write_paf", "search", "write_blast6",
           "write_search_tsv"]
