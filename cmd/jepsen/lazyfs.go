package main

import "phxgo/jepsen/lazyfs"

// lazyfsServeMain is `jepsen lazyfs-serve -mount M -backing B -control
// SOCK [-lifeline] ...`: the helper process serving one node's lazyfs
// disk (jepsen/lazyfs.ServeMain). phxcluster starts one per node from
// this binary, so the harness, which starts the processes using the
// mounts, never serves them itself.
func lazyfsServeMain(args []string) int { return lazyfs.ServeMain(args) }
