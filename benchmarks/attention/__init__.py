"""benchmarks/attention (run as python3 -m benchmarks.attention.<script>)."""
