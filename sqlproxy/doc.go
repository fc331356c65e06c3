// Package sqlproxy is part of phxgo (see README.md).
package sqlproxy
