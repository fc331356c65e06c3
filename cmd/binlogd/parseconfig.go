package main

import (
	"flag"

	"phxgo/binlogd/config"
	"phxgo/internal/cli"
)

// parseConfig parses a local command's flags and loads the node's config
// file that its -config flag (cfgPath) names. A stray argument is a usage
// error (cli.Parse).
func parseConfig(fs *flag.FlagSet, args []string, cfgPath *string) (*config.Config, error) {
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	return config.Load(*cfgPath)
}
