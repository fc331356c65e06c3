// Package jepsen is part of phxgo (see README.md).
package jepsen
