"""The solve path of the k-rule engines: one driver (:func:`~rulemip.algorithms.solve.driver.solve`,
its status decision :func:`~rulemip.algorithms.solve.driver.decide`) and the registry behind
``engine=`` (:mod:`~rulemip.algorithms.solve.registry`). It imports no concrete engine."""
