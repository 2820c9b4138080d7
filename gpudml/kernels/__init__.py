"""The kernel layer: how operator descriptions run, as plans of WGSL dispatches. Pure: no
wgpu, and no knowledge of the operators' semantics (gpudml/ops/ binds each operator to
its family here).

- base.py: `KernelFamily`, the protocol of a kernel family (one class per family module,
  its instance FAMILY), and `Planner` / `ProblemPlanner`, the same questions asked of an
  operator's descriptions (fused graphs implement them too);
- composite.py: `CompositeFamily`, an operator planned as kernels of several families;
- chain.py: chains of data-movement stages, the currency of fusion;
- the families: movement/ (data movement), reduction.py, scan.py, pooling.py, gemm.py,
  convolution.py (composite, on GEMM), normalization.py, elementwise.py, top_k.py; epilogue.py, the
  element-wise store epilogue the families take;
- builder.py: from a plan's Dispatch to a Kernel (WGSL, bindings, uniforms, grid);
- templates.py: where the Jinja2 templates (shaders/) are, and rendering them.
"""
