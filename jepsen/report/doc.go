// Package report draws a Jepsen run the way Jepsen's own reports look:
// pictures of latency and throughput over time with the fault windows
// shaded, and an HTML page that links them with the checkers' verdicts
// and the table of fault windows. jepsen.Run writes it into the run's
// result directory next to history.jsonl and results.json:
//
//	history ([]history.Op) ──build──► points, fault windows, ok/s buckets
//	                                   │
//	         latency.png ◄─────────────┤  every client op at (invoke, latency),
//	                                   │  log scale, blue ok / red fail / orange info
//	         throughput.png ◄──────────┤  ok completions per second (wider buckets
//	                                   │  past 600 s so a bucket stays visible)
//	         index.html ◄──────────────┘  verdicts, pictures, fault windows
//
// Times are seconds on the recorder's clock (0 = the start of the
// history). Fault windows are shaded in FaultShade over the whole height
// of each plot, a colour no mark uses. A fault that never healed is
// shaded to the end of the history.
//
// Only the standard library's image packages and basicfont
// (golang.org/x/image) are used: no plotting dependency, no external
// tool. The report is informative; the run's verdict never depends on it.
package report
