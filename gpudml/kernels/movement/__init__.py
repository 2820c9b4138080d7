"""The data-movement family: kernels that copy each output element from one element of a
source tensor (or write a fill constant), through a chain of index rules.

- family.py: the strategies, the dispatch of shaders/movement.wgsl.j2, the family's
  classes (`MovementFamily`, `CopyFamily`), `MovementPlanner`
  (an operator whose index rule is one chain stage) and `CopyPlanner` (an operator that
  copies boxes between tensors, one dispatch each);
- one module per operator: its index rule as a stage (kernels/chain.py) and its plan on
  the kernel's own axes (merged where the layout allows): slice.py (DML_SLICE1 and
  DML_SLICE), padding.py (DML_PADDING and DML_PADDING1), tile.py, gather.py,
  reverse_subsequences.py, join_split.py (DML_JOIN and DML_SPLIT).
"""
