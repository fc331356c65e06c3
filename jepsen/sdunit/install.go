package sdunit

import (
	"os"
	"path/filepath"
)

// Traversable adds the search bit for others (o+x, never read) to dir
// and each of its ancestors, so a unit's User= reaches files an operator
// installed below a test's temporary directories (0700 by default).
func Traversable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
				return err
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
