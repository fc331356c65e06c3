// Package config is binlogd's configuration file: JSON, every key
// documented on its field, validated at start with errors that name the
// key and the file. Secrets (MySQL passwords) live in a separate
// credentials file that must be mode 0600 and are never logged.
package config
