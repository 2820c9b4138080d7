"""The operators' rules of the conformance kit: one file per operator module of gpudml.ops
(its name), each registering the rules of its operators with `conformance.registry.rule`
as conformance.registry.discover() imports it. A module whose name starts with an
underscore holds helpers several rules share (_common.py) and is not imported as a rule.
"""
