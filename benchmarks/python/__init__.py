"""benchmarks/python (run as python3 -m benchmarks.python.<script>)."""
