package topology

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SMBIOS Memory Device (structure type 17) and Physical Memory Array (type
// 16) records, from the raw structure table or from `dmidecode -t memory`,
// as the DIMM slots of a machine's sockets. Section numbers are those of
// DSP0134 3.x ("7.18" is Memory Device). Names of codes follow dmidecode
// (dmi_memory_device_type() and friends) so that both sources give the same
// strings for the same device.

// MemoryDevice is one SMBIOS type 17 Memory Device: a memory slot, empty
// or holding a module, or soldered memory.
type MemoryDevice struct {
	Handle      int    // structure handle; -1 when the text has no Handle lines (dmidecode -q)
	ArrayHandle int    // handle of its Physical Memory Array (type 16); -1 when the text does not say
	ArrayUse    string // that array's Use as dmidecode names it ("System Memory", "Video Memory", ...); "" when the input has no record of the array
	Locator     string // Device Locator, the board's label: "P1-DIMMA1", "PROC 1 DIMM 3"; "" when not specified
	BankLocator string // e.g. "P0_Node0_Channel0_Dimm0", "P0 CHANNEL A"; "" when not specified
	Installed   bool   // a module is present (Size is neither 0 nor "No Module Installed")
	SizeMiB     int64  // module size in MiB; 0 for an empty slot or an unknown size
	Type        string // "DDR4", "DDR5", "LPDDR5", "HBM2", ... as dmidecode names it; "Unknown" when not given or out of spec
	Registered  bool   // Type Detail says Registered (Buffered) or LRDIMM
	SpeedMTs    int    // maximum speed in MT/s (dmidecode before 3.1 says MHz for the same number); 0 unknown
	FormFactor  string // "DIMM", "SODIMM", "Chip", "Row Of Chips", ...; "Unknown" when not given or out of spec
}

// DIMMSlot reports whether the device is a slot on the board that takes a
// module: not soldered memory (form factor SIP, Chip, DIP, ZIP, TSOP, Row
// Of Chips, Die), not a proprietary memory card, and not in an array whose
// use is video, flash, non-volatile or cache memory. Empty slots often
// report form factor Unknown: they count.
func (d MemoryDevice) DIMMSlot() bool {
	switch d.ArrayUse {
	case "Video Memory", "Flash Memory", "Non-volatile RAM", "Cache Memory":
		return false
	}
	switch d.FormFactor {
	case "SIP", "Chip", "DIP", "ZIP", "Proprietary Card", "TSOP", "Row Of Chips", "Die":
		return false
	}
	return true
}

// smbiosMemoryTypes are the Memory Type names (7.18.2), index code-1.
// 0x15-0x17 are reserved.
var smbiosMemoryTypes = [...]string{
	"Other", "Unknown", "DRAM", "EDRAM", "VRAM", "SRAM", "RAM", "ROM", "Flash", "EEPROM", // 0x01-0x0A
	"FEPROM", "EPROM", "CDRAM", "3DRAM", "SDRAM", "SGRAM", "RDRAM", "DDR", "DDR2", "DDR2 FB-DIMM", // 0x0B-0x14
	"", "", "", "DDR3", "FBD2", "DDR4", "LPDDR", "LPDDR2", "LPDDR3", "LPDDR4", // 0x15-0x1E
	"Logical non-volatile device", "HBM", "HBM2", "DDR5", "LPDDR5", "HBM3", // 0x1F-0x24
}

// smbiosFormFactors are the Memory Device Form Factor names (7.18.1),
// index code-1. CAMM is SMBIOS 3.7.
var smbiosFormFactors = [...]string{
	"Other", "Unknown", "SIMM", "SIP", "Chip", "DIP", "ZIP", "Proprietary Card", "DIMM", "TSOP", // 0x01-0x0A
	"Row Of Chips", "RIMM", "SODIMM", "SRIMM", "FB-DIMM", "Die", "CAMM", // 0x0B-0x11
}

// smbiosArrayUses are the Physical Memory Array Use names (7.17.2), index code-1.
var smbiosArrayUses = [...]string{
	"Other", "Unknown", "System Memory", "Video Memory", "Flash Memory", "Non-volatile RAM", "Cache Memory",
}

// smbiosName looks a code up in a name table; codes outside it, and
// reserved ones, are "Unknown" (dmidecode prints "<OUT OF SPEC>").
func smbiosName(names []string, code byte) string {
	if code == 0 || int(code) > len(names) || names[code-1] == "" {
		return "Unknown"
	}
	return names[code-1]
}

// Offsets and lengths of type 16 and 17 structures (7.17, 7.18).
const (
	smbiosTypeMemArray      = 16
	smbiosTypeMemDevice     = 17
	smbiosMemArrayMinLen    = 0x0F // 2.1: up to Number of Memory Devices
	smbiosMemDeviceMinLen   = 0x15 // 2.1: up to Type Detail
	smbiosMemDeviceSpeedLen = 0x17 // 2.3: Speed
	smbiosMemDeviceExtLen   = 0x20 // 2.7: Extended Size
	smbiosMemDeviceXSpeed   = 0x5C // 3.3: Extended Speed
	smbiosTypeDetailRDIMM   = 1 << 13
	smbiosTypeDetailLRDIMM  = 1 << 15
)

// ParseSMBIOSMemory decodes every type 17 Memory Device of a raw SMBIOS
// structure table, with the Use of the type 16 array each belongs to.
//
// table is the structure table alone, as /sys/firmware/dmi/tables/DMI holds
// it; path only names it in errors. A damaged table, a type 17 structure
// shorter than the SMBIOS 2.1 layout or a string number past a structure's
// strings is an *InputError. Type 16 structures too short to hold Use are
// ignored.
func ParseSMBIOSMemory(path string, table []byte) ([]MemoryDevice, error) {
	var devs []MemoryDevice
	uses := map[int]string{}
	err := smbiosWalk(path, table, func(st smbiosStruct) error {
		switch st.typ {
		case smbiosTypeMemArray:
			if len(st.f) >= smbiosMemArrayMinLen {
				uses[int(st.handle)] = smbiosName(smbiosArrayUses[:], st.f[0x05])
			}
		case smbiosTypeMemDevice:
			d, err := smbiosDecodeMemDevice(st)
			if err != nil {
				return &InputError{Path: path, Field: st.field(), Msg: "bad Memory Device structure", Err: err}
			}
			devs = append(devs, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	smbiosSetArrayUses(devs, uses)
	return devs, nil
}

// smbiosDecodeMemDevice decodes one type 17 structure.
func smbiosDecodeMemDevice(st smbiosStruct) (MemoryDevice, error) {
	f := st.f
	if len(f) < smbiosMemDeviceMinLen {
		return MemoryDevice{}, fmt.Errorf("length %d, want at least %d (SMBIOS 2.1 layout)", len(f), smbiosMemDeviceMinLen)
	}
	d := MemoryDevice{
		Handle:      int(st.handle),
		ArrayHandle: int(binary.LittleEndian.Uint16(f[0x04:])),
		FormFactor:  smbiosName(smbiosFormFactors[:], f[0x0E]),
		Type:        smbiosName(smbiosMemoryTypes[:], f[0x12]),
	}
	var err error
	if d.Locator, err = smbiosMemString(st.strs, f[0x10]); err != nil {
		return d, fmt.Errorf("device locator: %w", err)
	}
	if d.BankLocator, err = smbiosMemString(st.strs, f[0x11]); err != nil {
		return d, fmt.Errorf("bank locator: %w", err)
	}
	detail := binary.LittleEndian.Uint16(f[0x13:])
	d.Registered = detail&(smbiosTypeDetailRDIMM|smbiosTypeDetailLRDIMM) != 0
	// 7.18.5 Size: 0 no module, 0xFFFF unknown, bit 15 set = KiB units,
	// 0x7FFF = see Extended Size (2.7+, MiB in bits 30:0). dmidecode reads
	// 0x7FFF as 32767 MiB when the structure has no Extended Size.
	switch size := binary.LittleEndian.Uint16(f[0x0C:]); {
	case size == 0:
	case size == 0xFFFF:
		d.Installed = true
	case size == 0x7FFF && len(f) >= smbiosMemDeviceExtLen:
		d.Installed = true
		d.SizeMiB = int64(binary.LittleEndian.Uint32(f[0x1C:]) & 0x7FFFFFFF)
	case size&0x8000 != 0:
		d.Installed = true
		d.SizeMiB = (int64(size&0x7FFF) + 1023) / 1024
	default:
		d.Installed = true
		d.SizeMiB = int64(size)
	}
	// dmidecode prints nothing past Type Detail for an empty slot ("the
	// remaining fields are irrelevant"): neither does this decoder.
	if d.Installed && len(f) >= smbiosMemDeviceSpeedLen {
		// 7.18.4 Speed in MT/s: 0 unknown, 0xFFFF = see Extended Speed
		// (3.3+; dmidecode prints all 32 bits of it).
		speed := uint32(binary.LittleEndian.Uint16(f[0x15:]))
		if speed == 0xFFFF {
			speed = 0
			if len(f) >= smbiosMemDeviceXSpeed {
				speed = binary.LittleEndian.Uint32(f[0x54:])
			}
		}
		d.SpeedMTs = int(speed)
	}
	return d, nil
}

// smbiosMemString is string idx of a structure as dmidecode prints it:
// bytes outside printable ASCII are '.', and "Not Specified" (string 0, or
// that very text) is "".
func smbiosMemString(strs []byte, idx byte) (string, error) {
	raw, err := smbiosRawString(strs, idx)
	if err != nil {
		return "", err
	}
	b := make([]byte, len(raw))
	for i, c := range raw {
		if c < 32 || c >= 127 {
			c = '.'
		}
		b[i] = c
	}
	s := strings.TrimSpace(string(b))
	if s == "Not Specified" {
		return "", nil
	}
	return s, nil
}

// smbiosSetArrayUses gives each device the Use of its array.
func smbiosSetArrayUses(devs []MemoryDevice, uses map[int]string) {
	for i := range devs {
		if u, ok := uses[devs[i].ArrayHandle]; ok && devs[i].ArrayHandle >= 0 {
			devs[i].ArrayUse = u
		}
	}
}

// ParseDmidecodeMemory reads the text `dmidecode -t memory` (or `-t 17`,
// `-t 16,17`, or the full output) prints: its Memory Device records, with
// the Use of the Physical Memory Array records they name. Fields it does
// not know are ignored; lines that are not dmidecode's, values it cannot
// read, a string dmidecode could not read ("<BAD INDEX>") and a Memory
// Device record without a Size line are an *InputError with Line set.
// Sizes in MB only (dmidecode 3.1 and older) or in the largest whole unit
// ("32 GB"), and speeds in MHz (3.0 and older) or MT/s, are read.
func ParseDmidecodeMemory(path string, text []byte) ([]MemoryDevice, error) {
	var (
		devs    []MemoryDevice
		uses    = map[int]string{}
		dev     *MemoryDevice // the Memory Device being read, nil in an array record
		arr     = -1          // handle of the Physical Memory Array being read
		hasSize bool
	)
	titles := map[string]int{"Physical Memory Array": smbiosTypeMemArray, "Memory Device": smbiosTypeMemDevice}
	err := scanDmidecode(path, text, titles, dmidecodeVisitor{
		begin: func(typ, handle int) {
			dev, arr, hasSize = nil, -1, false
			if typ == smbiosTypeMemArray {
				arr = handle
				return
			}
			dev = &MemoryDevice{Handle: handle, ArrayHandle: -1, Type: "Unknown", FormFactor: "Unknown"}
		},
		field: func(key, val string) error {
			if dev == nil {
				if key == "Use" && arr >= 0 {
					uses[arr] = smbiosTextName(val)
				}
				return nil
			}
			if key == "Size" {
				hasSize = true
			}
			return smbiosSetMemTextField(dev, key, val)
		},
		end: func() error {
			if dev == nil {
				return nil
			}
			if !hasSize {
				return fmt.Errorf("no \"Size\" line (dmidecode prints one for every device of 21 bytes or more)")
			}
			devs = append(devs, *dev)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	smbiosSetArrayUses(devs, uses)
	return devs, nil
}

// smbiosTextName maps a name dmidecode printed to the decoder's:
// "<OUT OF SPEC>" and reserved codes are "Unknown", other names stay (a
// dmidecode newer than the tables above may name codes they do not).
func smbiosTextName(val string) string {
	if val == "<OUT OF SPEC>" || val == "Reserved" || val == "" {
		return "Unknown"
	}
	return val
}

// smbiosSetMemTextField stores one "Key: value" line of a Memory Device
// record in d. Unknown keys are ignored.
func smbiosSetMemTextField(d *MemoryDevice, key, val string) error {
	switch key {
	case "Array Handle":
		h, err := strconv.ParseUint(strings.TrimPrefix(val, "0x"), 16, 16)
		if err != nil || !strings.HasPrefix(val, "0x") {
			return fmt.Errorf("%q: want a handle like 0x003C", val)
		}
		d.ArrayHandle = int(h)
	case "Size":
		return smbiosTextMemSize(d, val)
	case "Form Factor":
		d.FormFactor = smbiosTextName(val)
	case "Locator", "Bank Locator":
		if val == "<BAD INDEX>" {
			return fmt.Errorf("dmidecode could not read the string (bad string number in the table)")
		}
		if val == "Not Specified" {
			val = ""
		}
		if key == "Locator" {
			d.Locator = val
		} else {
			d.BankLocator = val
		}
	case "Type":
		d.Type = smbiosTextName(val)
	case "Type Detail":
		d.Registered = strings.Contains(val, "Registered (Buffered)") || strings.Contains(val, "LRDIMM")
	case "Speed":
		return smbiosTextMemSpeed(d, val)
	}
	return nil
}

// smbiosTextMemSize reads Size as dmidecode prints it: "No Module
// Installed", "Unknown", or a whole number of bytes, kB, MB, GB, TB, ...
// (1024-based), which is rounded up to MiB as the decoder does.
func smbiosTextMemSize(d *MemoryDevice, val string) error {
	switch val {
	case "No Module Installed":
		d.Installed, d.SizeMiB = false, 0
		return nil
	case "Unknown":
		d.Installed, d.SizeMiB = true, 0
		return nil
	}
	bad := fmt.Errorf("%q: want a size like \"16 GB\", \"No Module Installed\" or \"Unknown\"", val)
	num, unit, _ := strings.Cut(val, " ")
	var shift uint
	switch unit {
	case "kB", "KB":
		shift = 10
	case "MB":
		shift = 20
	case "GB":
		shift = 30
	case "TB":
		shift = 40
	case "PB":
		shift = 50
	default:
		return bad
	}
	// Extended Size holds 31 bits of MiB: anything larger is no module.
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n > uint64(math.MaxInt32)<<20>>shift {
		return bad
	}
	d.Installed, d.SizeMiB = true, int64((n<<shift+1<<20-1)>>20)
	return nil
}

// smbiosTextMemSpeed reads Speed: "Unknown", "3200 MT/s", or "2133 MHz"
// (dmidecode before 3.1, sometimes followed by " (0.5 ns)").
func smbiosTextMemSpeed(d *MemoryDevice, val string) error {
	if val == "Unknown" {
		d.SpeedMTs = 0
		return nil
	}
	f := strings.Fields(val)
	if len(f) < 2 || (f[1] != "MT/s" && f[1] != "MHz") {
		return fmt.Errorf("%q: want a speed like \"3200 MT/s\" or \"Unknown\"", val)
	}
	n, err := strconv.ParseUint(f[0], 10, 32)
	if err != nil {
		return fmt.Errorf("%q: want a speed like \"3200 MT/s\" or \"Unknown\"", val)
	}
	d.SpeedMTs = int(n)
	return nil
}
