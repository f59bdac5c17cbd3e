package topology

import (
	"strings"
	"sync"

	"github.com/jaypipes/pcidb"
)

// PCINames names PCI devices from the pci.ids database where the machine
// has one (the pci.ids package; PCIDB_PATH points elsewhere), for imports
// whose files give only ids. It never fetches from the network. Loaded on
// the first lookup, once per import.
type PCINames struct {
	once sync.Once
	db   *pcidb.PCIDB
}

// name is "Vendor Device" from pci.ids for vendor:device, or "" where the
// database is missing or lacks the device.
func (p *PCINames) name(vendor, device string) string {
	p.once.Do(func() {
		if db, err := pcidb.New(); err == nil {
			p.db = db
		}
	})
	if p.db == nil {
		return ""
	}
	v, d := NormalizePCIID(vendor), NormalizePCIID(device)
	prod, ok := p.db.Products[v+d]
	if !ok || prod.Name == "" {
		return ""
	}
	if ven, ok := p.db.Vendors[v]; ok && ven.Name != "" && !strings.HasPrefix(prod.Name, ven.Name) {
		return ven.Name + " " + prod.Name
	}
	return prod.Name
}

// DeviceName is the package-level DeviceName, then pci.ids where
// DeviceName has only the ids to give. The zero PCINames is ready to use.
func (p *PCINames) DeviceName(vendor, device string) string {
	n := DeviceName(vendor, device)
	if n != NormalizePCIID(vendor)+":"+NormalizePCIID(device) {
		return n
	}
	if db := p.name(vendor, device); db != "" {
		return db
	}
	return n
}
