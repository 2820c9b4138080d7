"""The kernel layer: how operator descriptions run, as plans of WGSL dispatches. Pure: no
wgpu, and no knowledge of the operators' semantics (gpudml/ops/ binds each operator to
its family here).

- base.py: `Planner`, the protocol every family and fused graphs implement;
- chain.py: chains of data-movement stages, the currency of fusion;
- the families: movement/ (data movement), reduction.py, scan.py;
- builder.py: from a plan's Dispatch to a Kernel (WGSL, bindings, uniforms, grid);
- templates.py: where the Jinja2 templates (shaders/) are, and rendering them.
"""
