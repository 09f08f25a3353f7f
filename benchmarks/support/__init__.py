"""What the benchmarks share; `make bench` runs only the scripts beside this folder."""
