"""benchmarks/auto_cascade (run as python3 -m benchmarks.auto_cascade.<script>)."""
