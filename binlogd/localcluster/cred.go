package localcluster

import (
	"path/filepath"

	"phxgo/binlogd/config"
)

func loadCred(dir string) (config.Credentials, error) {
	return config.LoadCredentials(filepath.Join(dir, "credentials.json"))
}
