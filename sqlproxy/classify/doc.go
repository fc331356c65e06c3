// Package classify is the proxy's small SQL classifier: just enough of a
// lexer (comments, quoted strings and identifiers, MariaDB executable
// comments) to tell reads from writes, transaction control, USE and SET,
// locking reads (FOR UPDATE, LOCK IN SHARE MODE, FOR SHARE), statements
// that create session state which cannot be replayed on another
// connection, and Cetus routing hints (/*#mode=readwrite*/,
// /*#mode=readonly*/).
//
// It errs toward the master: anything it does not recognise is Other, and
// only Kind Read without locking, pinning or multiple statements is a
// replica candidate. FuzzClassify (corpus in testdata/fuzz) checks it
// never panics and keeps those safety verdicts.
package classify
