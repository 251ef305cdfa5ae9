"""Tree-ensemble pruning ([PRUNE], docs/explanation/tree_pruning.md): one driver
(:mod:`~rulemip.algorithms.pruning.driver`), the registered engines
(:mod:`~rulemip.algorithms.pruning.engines`: exact OA, CBCD paths, relax-and-round, the
MIP), and what they are built on (the cached oracle, CBCD, knapsack with conflicts)."""
