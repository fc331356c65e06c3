package localcluster

import (
	"os"
	"path/filepath"

	"phxgo/binlogd/config"
)

func loadCred(dir string) (config.Credentials, error) {
	return config.LoadCredentials(filepath.Join(dir, "credentials.json"))
}

// writeSecret writes a file that holds a password with mode 0600, also
// when an older version left it readable by others (os.WriteFile keeps
// an existing file's mode).
func writeSecret(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}
