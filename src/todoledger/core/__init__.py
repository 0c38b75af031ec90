"""The pure core, no I/O: the vocabulary, merging, the dependency graph, replay and every view of a plan."""
