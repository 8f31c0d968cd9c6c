"""``python -m streams.bench.traced_run SAMPLER streams-args...``: ``streams run`` with tracing on.

What a user's OpenTelemetry setup does before the runtime is built: an SDK tracer provider
set as the global one, with ``SAMPLER`` (``on``: every span recorded; a number such as
``0.01``: parent-based ratio sampling) and a batch span processor whose exporter drops
what it is handed (the bench measures the record path, not a collector). Then the
``streams`` command runs with the remaining arguments. Needs ``opentelemetry-sdk`` (in the
``dev`` extra), imported when run.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main() -> None:
    # The SDK is a dev dependency, not a core one: imported only when the bench runs this.
    from opentelemetry import trace  # noqa: PLC0415
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import (  # noqa: PLC0415
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )
    from opentelemetry.sdk.trace.sampling import (  # noqa: PLC0415
        ALWAYS_ON,
        ParentBased,
        TraceIdRatioBased,
    )

    class Dropped(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    spec, *args = sys.argv[1:]
    sampler = ALWAYS_ON if spec == "on" else ParentBased(TraceIdRatioBased(float(spec)))
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(BatchSpanProcessor(Dropped()))
    trace.set_tracer_provider(provider)
    from streams.cli import main as streams  # noqa: PLC0415 - after the provider is set

    sys.argv = ["streams", *args]
    try:
        streams()
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
