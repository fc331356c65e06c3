// Package masterlease is part of phxgo (see README.md).
package masterlease
