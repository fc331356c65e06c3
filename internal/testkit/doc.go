// Package testkit holds the small helpers many of the project's tests
// wrote for themselves: a log sink a test reads while goroutines write
// it, polling a condition until a deadline instead of sleeping, and
// copying a file. It is for tests only; nothing in a binary imports it.
package testkit
