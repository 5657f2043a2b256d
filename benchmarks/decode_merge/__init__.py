"""benchmarks/decode_merge (run as python3 -m benchmarks.decode_merge.<script>)."""
