"""Convex optimization under the exact searches: the one outer-approximation loop
(:mod:`~rulemip.algorithms.convex.oa_loop`, its options and the relaxation hook), tangent-cut
OA for convex losses on MILP backends (:mod:`~rulemip.algorithms.convex.tangent_cuts`), and
Frank–Wolfe for continuous relaxations (:mod:`~rulemip.algorithms.convex.frank_wolfe`)."""
