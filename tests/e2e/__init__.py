"""End-to-end tests against real Jaeger and OpenTelemetry Collector binaries."""
