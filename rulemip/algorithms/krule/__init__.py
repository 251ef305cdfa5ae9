"""The exact k-rule engines, each registered with the driver in its own module: the
interval-cover MIP, the box-selection CIP (OA or branch and bound over boxes), column
generation, the cell sweep, MIP boosting, and the two-rule bound."""
