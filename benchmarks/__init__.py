"""The benchmarks behind the figures in docs/: each runs as a module from the repository's root,
`python -B -m benchmarks.NAME`, and prints what it measured (docs/performance.md lists them)."""
