"""The exact one-box search (docs/explanation/box_search.md): branch and bound over threshold
ranges in a compiled kernel — rows as bits (:mod:`~rulemip.boosting.boxsearch.words`), node
bounds (:mod:`~rulemip.boosting.boxsearch.bounds`), one node
(:mod:`~rulemip.boosting.boxsearch.node`),
the search loop (:mod:`~rulemip.boosting.boxsearch.kernel`) — its Python driver
(:mod:`~rulemip.boosting.boxsearch.range_search`) and its split over cores and a cluster
(:mod:`~rulemip.boosting.boxsearch.split_search`). Rule boosting, the k-rule engines and the
bounds all ask it their one-box questions."""
