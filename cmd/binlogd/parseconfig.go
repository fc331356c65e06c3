package main

import (
	"flag"

	"phxgo/binlogd/config"
)

// parseConfig parses a local command's flags and loads the node's config
// file that its -config flag (cfgPath) names.
func parseConfig(fs *flag.FlagSet, args []string, cfgPath *string) (*config.Config, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return config.Load(*cfgPath)
}
