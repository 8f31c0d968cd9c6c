"""Observability for a running Streams app: metrics, health, trace context, log context, stalls.

Every module here is optional at run time: nothing in it touches the record path unless the
feature it serves is switched on when the runtime is built, and a module that needs an optional
package (``prometheus_client`` for metrics, ``opentelemetry`` for tracing) imports it lazily.
"""
