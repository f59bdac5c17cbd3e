package topology

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// CreateTemp is os.CreateTemp with the usual file mode: the file is
// created 0644 less the umask, not 0600, so a dataset, plan or store
// written by one account can be read by a training service running as
// another. pattern's last "*" is replaced by a random string (or one is
// appended).
func CreateTemp(dir, pattern string) (*os.File, error) {
	for range 10000 {
		name := filepath.Join(dir, tempName(pattern))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create a temporary file in %s: too many names taken", dir)
}

// MkdirTemp is os.MkdirTemp with mode 0755 less the umask, not 0700.
func MkdirTemp(dir, pattern string) (string, error) {
	for range 10000 {
		name := filepath.Join(dir, tempName(pattern))
		err := os.Mkdir(name, 0o755)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("create a temporary directory in %s: too many names taken", dir)
}

func tempName(pattern string) string {
	r := fmt.Sprintf("%d", rand.Uint32())
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		return pattern[:i] + r + pattern[i+1:]
	}
	return pattern + r
}
