"""Devices on private contexts, for tests that must not touch the shared ones (the
fixtures' devices), nor be disturbed by what ran on them before: a context of its own over
the shared wgpu device (its own buffer pool and pipeline cache, whose counts then move only
with what the test does; smaller limits where asked), or a context with a wgpu device of its
own (which a test may destroy)."""

from __future__ import annotations

import dataclasses

from conftest import get_device

import gpudml as dml
from gpudml.device import device as device_module
from gpudml.runtime import adapters
from gpudml.runtime.context import _ALIVE, GpuContext, _create_context


def device_on(ctx: GpuContext, feature_level=None, adapter_class=None) -> dml.Device:
    """A Device bound to `ctx` (not registered as a shared context)."""
    saved = device_module.get_context
    device_module.get_context = lambda request: ctx
    try:
        return dml.Device(feature_level=feature_level, adapter_class=adapter_class)
    finally:
        device_module.get_context = saved


def limited_device(adapter: str, adapter_class=None, feature_level=None, shared_pipelines: bool = False,
                   **caps) -> dml.Device:
    """A Device on a context of its own over the shared wgpu device of `adapter`: its own
    buffer pool, and its own pipeline cache (or, with `shared_pipelines`, the shared
    context's compiled pipelines, for a test that counts buffers only), reporting smaller
    limits where asked (Caps fields, e.g. max_storage_binding_size=4096): the runtime plans
    and checks against them, the adapter runs the result."""
    shared = get_device(adapter)._ctx
    ctx = GpuContext(adapter=shared.adapter, device=shared.device, caps=dataclasses.replace(shared.caps, **caps))
    if shared_pipelines:
        ctx._pipelines = shared._pipelines
    _ALIVE.append(ctx)  # its pipelines and pooled buffers are never released outside the wgpu lock
    return device_on(ctx, feature_level, adapter_class)


def own_device(adapter: str) -> dml.Device:
    """A Device with a wgpu device of its own on `adapter`."""
    return device_on(_create_context(adapters.choose_adapter(adapter)))


def lose(dev: dml.Device) -> None:
    """Simulate a device loss: destroy the wgpu device (under the wgpu lock, like every
    wgpu call; see runtime/context.py)."""
    with dev._ctx.lock:
        dev._ctx.device.destroy()
