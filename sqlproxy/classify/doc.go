// Package classify is the proxy's small SQL classifier: just enough of a
// lexer (comments, quoted strings and identifiers, MariaDB executable
// comments) to tell reads from writes, transaction control, USE and SET,
// locking reads (FOR UPDATE, LOCK IN SHARE MODE, FOR SHARE), statements
// that create session state which cannot be replayed on another
// connection, and Cetus routing hints (/*#mode=readwrite*/,
// /*#mode=readonly*/).
//
// It also flags kills (Info.Kills: KILL in any form, in any statement of
// a multi-statement text and in the string literals of PREPARE and
// EXECUTE [IMMEDIATE]; kill.go), which the proxy refuses. Only KILL, PREPARE and EXECUTE pay for that check.
//
// Where a quoted string ends depends on the session's sql_mode
// (NO_BACKSLASH_ESCAPES, ANSI_QUOTES; lexmode.go): ClassifyIn reads a
// text with a backslash under each lexing the mode it is given leaves
// possible, and merges the verdicts toward safety.
//
// It errs toward the master: anything it does not recognise is Other, and
// only Kind Read without locking, pinning or multiple statements is a
// replica candidate. FuzzClassify (corpus in testdata/fuzz) checks it
// never panics and keeps those safety verdicts (a kill stays
// flagged behind a hint and after another statement).
package classify
